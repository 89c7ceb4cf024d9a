import { describe, expect, it } from 'vitest';
import {
  findScratchPathViolation,
  isPathWithin,
  ScratchPathGuard,
  scratchPathSummaryMessage,
} from '../../src/workspace/scratch-path.js';
import { ScratchPathGuards } from '../../src/workspace/scratch-path-guards.js';
import { createCapturingLogger } from '../helpers/workspace-test-helpers.js';

const scratchRoot = '/root/.claude-code-router/cursor-sdk-workspaces';
const workspace = `${scratchRoot}/0123456789abcdef0123456789abcdef`;

describe('findScratchPathViolation', () => {
  it('finds a scratch path in a top-level argument', () => {
    expect(findScratchPathViolation({ file_path: `${workspace}/src/a.ts` }, scratchRoot)).toEqual({
      path: 'file_path',
      value: `${workspace}/src/a.ts`,
    });
  });

  it('finds it inside a shell command string', () => {
    const command = `cd ${workspace} && ls -la`;
    expect(findScratchPathViolation({ command, description: 'list' }, scratchRoot)).toEqual({
      path: 'command',
      value: command,
    });
    expect(findScratchPathViolation({ command: `ls "${scratchRoot}"` }, scratchRoot)?.path).toBe('command');
  });

  it('reports the JSON path of nested arguments', () => {
    const args = {
      edits: [
        { file_path: '/home/me/proj/a.ts', old: 'x', new: 'y' },
        { file_path: `${workspace}/b.ts`, old: 'x', new: 'y' },
      ],
      'odd key': { deep: [[`${workspace}`]] },
    };
    expect(findScratchPathViolation(args, scratchRoot)?.path).toBe('edits[1].file_path');
    expect(findScratchPathViolation({ 'odd key': args['odd key'] }, scratchRoot)?.path).toBe(
      '["odd key"].deep[0][0]',
    );
    expect(findScratchPathViolation(`${workspace}/x`, scratchRoot)?.path).toBe('$');
  });

  it('matches either separator, a trailing separator, and shell-escaped spaces', () => {
    expect(findScratchPathViolation({ p: 'C:/Users/me/ws/abc' }, 'C:\\Users\\me\\ws\\')?.path).toBe('p');
    expect(findScratchPathViolation({ p: 'C:\\Users\\me\\ws' }, 'C:/Users/me/ws')?.path).toBe('p');
    expect(findScratchPathViolation({ c: 'cd /a/my\\ ws/k && ls' }, '/a/my ws')?.path).toBe('c');
  });

  it('does not match a different path that merely shares a prefix or suffix', () => {
    expect(findScratchPathViolation({ p: `${scratchRoot}-old/x` }, scratchRoot)).toBeUndefined();
    expect(findScratchPathViolation({ p: `${scratchRoot}2` }, scratchRoot)).toBeUndefined();
    expect(findScratchPathViolation({ p: `/home/x${scratchRoot}` }, scratchRoot)).toBeUndefined();
  });

  it('finds nothing in clean arguments, numbers, booleans and nulls', () => {
    expect(
      findScratchPathViolation(
        { command: 'ls /home/me/proj', n: 3, b: true, z: null, list: ['/tmp', { q: 'x' }] },
        scratchRoot,
      ),
    ).toBeUndefined();
    expect(findScratchPathViolation(undefined, scratchRoot)).toBeUndefined();
  });

  it('is skipped when the host root lies under the scratch root', () => {
    const args = { command: `cd ${workspace} && ls` };
    expect(findScratchPathViolation(args, scratchRoot, `${scratchRoot}/my-project`)).toBeUndefined();
    expect(findScratchPathViolation(args, scratchRoot, scratchRoot)).toBeUndefined();
    expect(findScratchPathViolation(args, scratchRoot, '/home/me/proj')?.path).toBe('command');
    expect(findScratchPathViolation(args, scratchRoot, `${scratchRoot}-sibling`)?.path).toBe('command');
  });

  it('with the home directory, matches the root written as ~/…, $HOME/… or ${HOME}/… (either separator)', () => {
    const home = '/root';
    const key = '0123456789abcdef0123456789abcdef';
    for (const prefix of ['~', '$HOME', '${HOME}']) {
      const command = `cd ${prefix}/.claude-code-router/cursor-sdk-workspaces/${key} && ls`;
      expect(findScratchPathViolation({ command }, scratchRoot, undefined, home)?.path).toBe('command');
    }
    expect(
      findScratchPathViolation({ p: '~\\ws\\abc' }, 'C:\\Users\\me\\ws', undefined, 'C:\\Users\\me')?.path,
    ).toBe('p');
    expect(
      findScratchPathViolation({ c: 'ls ~/my\\ ws/k' }, '/home/me/my ws', undefined, '/home/me')?.path,
    ).toBe('c');
    // Without the home directory, or glued to other text, it is not a reference.
    expect(
      findScratchPathViolation({ p: '~/.claude-code-router/cursor-sdk-workspaces' }, scratchRoot),
    ).toBeUndefined();
    expect(
      findScratchPathViolation(
        { p: 'x~/.claude-code-router/cursor-sdk-workspaces' },
        scratchRoot,
        undefined,
        home,
      ),
    ).toBeUndefined();
  });

  it('never takes a bare ~ or a path outside the scratch root for it', () => {
    // A scratch root that is the home directory itself: `~` alone names far more than the scratch root.
    expect(
      findScratchPathViolation({ command: 'ls ~/src' }, '/home/me', undefined, '/home/me'),
    ).toBeUndefined();
    expect(findScratchPathViolation({ command: 'ls ~' }, '/home/me/', undefined, '/home/me')).toBeUndefined();
    // A scratch root outside the home directory has no home-relative spelling.
    expect(
      findScratchPathViolation(
        { p: '~/cursor-sdk-workspaces' },
        '/srv/cursor-sdk-workspaces',
        undefined,
        '/home/me',
      ),
    ).toBeUndefined();
    expect(
      findScratchPathViolation(
        { p: '~/.claude-code-router/cursor-sdk-workspaces-old' },
        scratchRoot,
        undefined,
        '/root',
      ),
    ).toBeUndefined();
    // The host root under the scratch root still turns detection off.
    expect(
      findScratchPathViolation(
        { p: '~/.claude-code-router/cursor-sdk-workspaces/x' },
        scratchRoot,
        `${scratchRoot}/p`,
        '/root',
      ),
    ).toBeUndefined();
  });

  it('never matches an empty or root-only scratch root', () => {
    expect(findScratchPathViolation({ p: '/etc/passwd' }, '/')).toBeUndefined();
    expect(findScratchPathViolation({ p: 'x' }, '')).toBeUndefined();
  });

  it('survives deeply nested input', () => {
    let nested: unknown = `${workspace}/deep`;
    for (let depth = 0; depth < 10_000; depth += 1) nested = { a: nested };
    expect(findScratchPathViolation(nested, scratchRoot)).toBeUndefined();
  });
});

describe('isPathWithin', () => {
  it('compares whole segments, separator-agnostic', () => {
    expect(isPathWithin('/a/b/c', '/a/b')).toBe(true);
    expect(isPathWithin('/a/b', '/a/b/')).toBe(true);
    expect(isPathWithin('/a/bc', '/a/b')).toBe(false);
    expect(isPathWithin('C:\\a\\b', 'C:/a')).toBe(true);
  });
});

describe('ScratchPathGuard', () => {
  const badCall = (index: number) => ({
    toolName: 'Bash',
    toolCallId: `toolu_${index}`,
    input: { command: `cd ${workspace} && ls`, description: 'list' },
  });

  it('corrects a violating call with a result naming the argument and the host root', () => {
    const { logger } = createCapturingLogger();
    const guard = new ScratchPathGuard({ scratchRoot, logger });
    const check = guard.check(badCall(1), '/home/me/proj');
    expect(check.forward).toBe(false);
    if (check.forward) return;
    expect(check.violation.path).toBe('command');
    expect(check.correction).toContain('`command`');
    expect(check.correction).toContain('/home/me/proj');
    expect(check.correction).toContain(workspace);
    expect(check.correction).toContain('The Bash call was not run');
  });

  it('without a host root, tells the model to use host paths from the conversation', () => {
    const guard = new ScratchPathGuard({ scratchRoot, logger: createCapturingLogger().logger });
    const check = guard.check(badCall(1));
    expect(check.forward).toBe(false);
    if (!check.forward)
      expect(check.correction).toContain('only absolute host paths that appear in the conversation');
  });

  it('forwards clean calls without counting them', () => {
    const { logger, records } = createCapturingLogger();
    const guard = new ScratchPathGuard({ scratchRoot, logger });
    expect(
      guard.check({ toolName: 'Read', input: { file_path: '/home/me/proj/a.ts' } }, '/home/me/proj'),
    ).toEqual({
      forward: true,
    });
    expect(guard.metrics).toEqual({ scratchPathViolations: 0, scratchPathCorrections: 0 });
    guard.summarizeTurn();
    expect(records).toEqual([]);
  });

  it('corrects at most three times per session, then forwards unchanged, counting every violation', () => {
    const { logger, records } = createCapturingLogger();
    const guard = new ScratchPathGuard({ scratchRoot, logger });
    const results = [1, 2, 3, 4, 5].map((index) => guard.check(badCall(index), '/home/me/proj'));
    expect(results.map((result) => result.forward)).toEqual([false, false, false, true, true]);
    expect(results[3]).toMatchObject({ forward: true, violation: { path: 'command' } });
    expect(guard.metrics).toEqual({ scratchPathViolations: 5, scratchPathCorrections: 3 });
    const warnings = records.filter(
      (record) => record.msg === 'host tool call references the scratch workspace',
    );
    expect(warnings).toHaveLength(5);
    expect(warnings.map((record) => record.level)).toEqual([40, 40, 40, 40, 40]);
    expect(warnings.map((record) => record.action)).toEqual([
      'corrected',
      'corrected',
      'corrected',
      'forwarded',
      'forwarded',
    ]);
    expect(warnings[0]).toMatchObject({ tool: 'Bash', toolCallId: 'toolu_1', argument: 'command' });
  });

  it('honours a custom correction cap', () => {
    const guard = new ScratchPathGuard({
      scratchRoot,
      logger: createCapturingLogger().logger,
      maxCorrections: 1,
    });
    expect(guard.check(badCall(1)).forward).toBe(false);
    expect(guard.check(badCall(2)).forward).toBe(true);
  });

  it('does nothing when the host root lives under the scratch root', () => {
    const { logger, records } = createCapturingLogger();
    const guard = new ScratchPathGuard({ scratchRoot, logger });
    expect(guard.check(badCall(1), `${scratchRoot}/project`)).toEqual({ forward: true });
    expect(guard.metrics.scratchPathViolations).toBe(0);
    expect(records).toEqual([]);
  });

  it('logs the summary line exactly once for a turn with violations, and not for a clean turn', () => {
    const { logger, records } = createCapturingLogger();
    const guard = new ScratchPathGuard({ scratchRoot, logger: createCapturingLogger().logger });
    guard.check(badCall(1), '/home/me/proj');
    guard.check(badCall(2), '/home/me/proj');
    guard.summarizeTurn(logger);
    guard.summarizeTurn(logger);
    guard.check({ toolName: 'Read', input: { file_path: '/home/me/proj/a' } }, '/home/me/proj');
    guard.summarizeTurn(logger);
    expect(records).toHaveLength(1);
    expect(records[0]).toMatchObject({
      level: 40,
      msg: 'cursor-sdk turn produced scratch-workspace tool paths',
      scratchPathViolations: 2,
      scratchPathCorrections: 2,
      sessionScratchPathViolations: 2,
    });
    expect(scratchPathSummaryMessage).toBe('cursor-sdk turn produced scratch-workspace tool paths');
  });
});

describe('ScratchPathGuards', () => {
  it('keeps one guard per session and summarizes per turn through the engine-facing calls', () => {
    const { logger, records } = createCapturingLogger();
    const guards = new ScratchPathGuards({ scratchRoot, logger });
    const call = { toolCallId: 't1', toolName: 'Bash', input: { command: `ls ${workspace}` } };
    const context = { workspaceDir: workspace, hostRoot: '/home/me/proj' };
    for (let index = 0; index < 4; index += 1) guards.check('a'.repeat(32), call, context);
    expect(guards.check('b'.repeat(32), call, context).forward).toBe(false);
    expect(guards.metrics('a'.repeat(32))).toEqual({ scratchPathViolations: 4, scratchPathCorrections: 3 });
    expect(guards.metrics('b'.repeat(32))).toEqual({ scratchPathViolations: 1, scratchPathCorrections: 1 });
    guards.endTurn('a'.repeat(32));
    const summaries = records.filter((record) => record.msg === scratchPathSummaryMessage);
    expect(summaries).toHaveLength(1);
    expect(summaries[0]).toMatchObject({ session: 'a'.repeat(32), scratchPathViolations: 4 });
    guards.forget('a'.repeat(32));
    expect(guards.metrics('a'.repeat(32))).toBeUndefined();
  });

  it('defaults the scratch root to the call’s workspace directory', () => {
    const guards = new ScratchPathGuards({ logger: createCapturingLogger().logger });
    const context = { workspaceDir: workspace };
    expect(
      guards.check(
        'c'.repeat(32),
        { toolCallId: 't', toolName: 'Read', input: { p: `${workspace}/x` } },
        context,
      ).forward,
    ).toBe(false);
    expect(
      guards.check(
        'c'.repeat(32),
        { toolCallId: 't', toolName: 'Read', input: { p: `${scratchRoot}/other` } },
        context,
      ).forward,
    ).toBe(true);
  });
});
