/**
 * The README is a guide in a user's order — try it (`cursor-bridge claude`), the three roles (gateway, inside
 * Claude Code Router, MCP tool host), point your client, configuration, troubleshooting — and says what stalled a
 * new user: when CCR must have `CURSOR_API_KEY` (the bridge inside CCR reads the key from CCR's environment), how to
 * keep CCR from writing conversation text to disk (the bridge writes none; CCR's own log may), and that the Docker
 * commands need Compose v2. The commands themselves run from a fresh clone in test/e2e/first-hour.e2e.test.ts.
 */

import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { repoRoot } from '../helpers/repo-root.js';

let readme: string;
beforeAll(async () => {
  readme = await readFile(join(repoRoot, 'README.md'), 'utf8');
});

/** The text of the section under `heading` (a whole heading line), up to the next heading of its level or above. */
const section = (heading: string): string => {
  const level = /^#+/.exec(heading)?.[0].length ?? 2;
  const start = readme.split('\n').indexOf(heading);
  if (start < 0) throw new Error(`README.md has no heading ${heading}`);
  const lines = readme.split('\n').slice(start + 1);
  const end = lines.findIndex((line) => new RegExp(`^#{1,${level}} `).test(line));
  return lines.slice(0, end < 0 ? undefined : end).join('\n');
};

describe('README.md for a new user', () => {
  it('goes: Try it (cursor-bridge claude), the three roles (gateway, CCR, MCP tool host), clients, Configuration', () => {
    const headings = readme.split('\n').filter((line) => /^#{2,3} /.test(line));
    const order = [
      '## Try it',
      '## The three roles',
      '### 1. The gateway: `cursor-bridge serve`',
      '### 2. Inside Claude Code Router',
      '### 3. Standalone MCP tool host: `cursor-bridge mcp-host`',
      '## Point your client',
      '## Configuration',
      '## Troubleshooting',
    ].map((heading) => headings.indexOf(heading));
    expect(order.every((index) => index >= 0)).toBe(true);
    expect([...order].sort((a, b) => a - b)).toEqual(order);
    expect(section('## Try it')).toContain('\ncursor-bridge claude ');
    expect(section('## Try it')).toContain('\nnpx cursor-bridge claude ');
  });

  it.each([
    ['#### Claude Code Router 1.x / 2.x (CCR)', /export CURSOR_API_KEY=crsr_\.\.\. +# before `ccr restart`/],
    ['#### Claude Code Router 3 (CCR 3)', /export CURSOR_API_KEY=crsr_\.\.\. +# before `ccr start`/],
  ])('%s: CURSOR_API_KEY is exported before CCR starts, and says why', (heading, line) => {
    const text = section(heading);
    expect(text).toMatch(line);
    expect(text).toContain('**When to set `CURSOR_API_KEY`.**');
  });

  it('the CCR sections say how to keep conversation text off the disk', () => {
    expect(section('#### Claude Code Router 1.x / 2.x (CCR)')).toContain(
      'Set `"LOG": false` in `config.json` (then\n`ccr restart`) to keep CCR from writing those log files.',
    );
    expect(section('#### Claude Code Router 3 (CCR 3)')).toContain(
      'set\n`observability.requestLogBodyCapture` to `"none"`',
    );
  });

  it('Docker states the Compose v2 requirement and the error without it', () => {
    const docker = section('#### Running with Docker');
    expect(docker).toContain('The Compose commands need Docker Compose v2');
    expect(docker).toContain('`unknown flag: --build`');
  });

  it('documents one command for the example tool host', () => {
    expect(section('### 3. Standalone MCP tool host: `cursor-bridge mcp-host`')).toContain(
      'cursor-bridge example mcp-tool-host &',
    );
  });
});
