/**
 * Which client a conversation talks to, as the console lists it: a known client's name from its
 * user agent (or Codex's `originator`), else the user agent's first product token, clipped — never more
 * of a header than that.
 */

import { describe, expect, it } from 'vitest';
import { clientName } from '../../src/engine/client-name.js';

describe('clientName', () => {
  it.each([
    ['Claude Code', { 'user-agent': 'claude-cli/2.1.197 (external, sdk-cli)' }],
    ['Claude Code', { 'user-agent': 'claude-cli/1.0.0 (external, cli)' }],
    ['Claude Code', { 'user-agent': '  Claude-CLI/2.1.332  ' }],
    [
      'Codex',
      { 'user-agent': 'codex_exec/0.171.0 (Ubuntu 24.4.0; x86_64) xterm-256color (codex_exec; 0.171.0)' },
    ],
    ['Codex', { 'user-agent': 'codex_cli_rs/0.171.0 (Mac OS 15.1.0; arm64) iTerm.app/3.5.0' }],
    ['Codex', { 'user-agent': 'codex-tui/0.171.0' }],
    ['Codex', { originator: 'codex_exec' }],
    ['Codex', { 'user-agent': 'reqwest/0.12', originator: 'codex_cli_rs' }],
    ['OpenCode', { 'user-agent': 'opencode/1.18.33 ai-sdk/provider-utils/3.0.10 runtime/bun/1.2.21' }],
  ])('names %s from %j', (name, headers) => {
    expect(clientName(headers)).toBe(name);
  });

  it('takes the first product token of a user agent it does not know', () => {
    expect(clientName({ 'user-agent': 'curl/8.0' })).toBe('curl');
    expect(clientName({ 'user-agent': 'curl/8.5.0' })).toBe('curl');
    expect(clientName({ 'user-agent': 'ai-sdk/anthropic/2.0.1 ai-sdk/provider-utils/3.0.0' })).toBe('ai-sdk');
    expect(clientName({ 'user-agent': 'OpenAI/JS 5.20.0' })).toBe('OpenAI');
    expect(clientName({ 'user-agent': 'Anthropic/JS 0.60.0' })).toBe('Anthropic');
    expect(clientName({ 'user-agent': 'python-requests/2.32.3' })).toBe('python-requests');
    expect(clientName({ 'user-agent': 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36' })).toBe(
      'Mozilla',
    );
  });

  it("is 'unknown' without a user agent, or with one that starts with no product token", () => {
    expect(clientName({})).toBe('unknown');
    expect(clientName({ 'user-agent': '' })).toBe('unknown');
    expect(clientName({ 'user-agent': '   ' })).toBe('unknown');
    expect(clientName({ 'user-agent': '(compatible; bot)' })).toBe('unknown');
    expect(clientName({ 'user-agent': '/1.0' })).toBe('unknown');
    expect(clientName({ originator: 'somebody-else' })).toBe('unknown');
  });

  it('clips a long or odd user agent to its product token, at most 40 characters', () => {
    expect(clientName({ 'user-agent': `${'a'.repeat(100)}/1.0` })).toBe('a'.repeat(40));
    expect(clientName({ 'user-agent': 'my-tool<script>alert(1)</script>' })).toBe('my-tool');
    expect(clientName({ 'user-agent': 'tool name with spaces and a secret sk-123' })).toBe('tool');
    expect(clientName({ 'user-agent': 'agent;user=ada@example.com' })).toBe('agent');
    expect(clientName({ 'user-agent': 'x\u00e9t\u00e9/1.0' })).toBe('x');
    for (const agent of ['a'.repeat(5_000), `${'b'.repeat(50)} c/1`, 'weird://host/path?q=1']) {
      const name = clientName({ 'user-agent': agent });
      expect(name.length).toBeLessThanOrEqual(40);
      expect(name).toMatch(/^[A-Za-z0-9._-]+$/);
    }
  });

  it('reads only the lower-cased header names a TurnRequest carries', () => {
    expect(clientName({ 'User-Agent': 'claude-cli/2.1.197' })).toBe('unknown');
  });
});
