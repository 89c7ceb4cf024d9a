/** The SDK options each kind of session gets: Cursor's hosted web tools only where the request offered them. */
import { describe, expect, it } from 'vitest';
import { buildAgentOptions } from '../../../src/upstream/cursor/cursor-session.js';
import type { UpstreamMode, UpstreamWebTools } from '../../../src/upstream/upstream-port.js';

const options = (mode: UpstreamMode, webTools?: UpstreamWebTools) =>
  buildAgentOptions(
    {
      apiKey: 'crsr_test',
      mode,
      workspaceDir: '/scratch/a',
      agentCwd: '/home/user/project',
      enableAgentRetries: true,
      ...(webTools === undefined ? {} : { webTools }),
    },
    { sandbox: false },
  );

describe('buildAgentOptions and the hosted web tools', () => {
  it.each([
    ['bridge', undefined, ['mcp'], ['project'], '/scratch/a'],
    ['bridge', { fetch: false, only: false }, ['mcp', 'webSearch'], ['project'], '/scratch/a'],
    ['bridge', { fetch: true, only: false }, ['mcp', 'webSearch', 'webFetch'], ['project'], '/scratch/a'],
    ['plan', undefined, [], undefined, '/scratch/a'],
    ['plan', { fetch: false, only: false }, ['webSearch'], undefined, '/scratch/a'],
    ['agent', undefined, undefined, undefined, '/home/user/project'],
    // A search side call: the web search alone, no project settings, never in the user's project.
    ['bridge', { fetch: false, only: true }, ['webSearch'], undefined, '/scratch/a'],
    ['agent', { fetch: false, only: true }, ['webSearch'], undefined, '/scratch/a'],
  ] as const)('%s with %j: tools %j, setting sources %j, cwd %s', (mode, webTools, tools, sources, cwd) => {
    const built = options(mode, webTools);
    expect(built.tools).toEqual(tools);
    expect(built.local?.settingSources).toEqual(sources);
    expect(built.local?.cwd).toBe(cwd);
    if (webTools?.only === true) expect(built.mode).toBeUndefined();
  });
});
