/**
 * Client strings never make the log as large as the request (before, one 4 MiB unknown block `type` added
 * 4–8 MB of log at `info`), and a repeated warning is logged once, then counted.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { boundLogFields, createLogger } from '../../src/logging/logger.js';
import { REPEATED_WARNINGS_MESSAGE } from '../../src/logging/repeat-limiter.js';
import type { ScriptSource } from '../../src/upstream/scripted/scripted-upstream.js';
import { startScriptedBridgeServer } from '../helpers/scripted-bridge-server.js';

const textTurn: ScriptSource = [
  { type: 'text-delta', text: 'ok' },
  { type: 'end', status: 'finished' },
];

/** A pino destination in memory: every line written, parsed on demand. */
const memoryLog = () => {
  const lines: string[] = [];
  return {
    destination: { write: (line: string) => void lines.push(line) },
    bytes: () => lines.reduce((sum, line) => sum + Buffer.byteLength(line), 0),
    records: () => lines.map((line) => JSON.parse(line) as Record<string, unknown>),
  };
};

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const start = async (log: ReturnType<typeof memoryLog>, warningIntervalMs?: number) => {
  const logger = createLogger({ level: 'info', destination: log.destination });
  const bridge = await startScriptedBridgeServer(textTurn, {
    logger,
    ...(warningIntervalMs === undefined ? {} : { warningIntervalMs }),
  });
  cleanups.push(bridge.close);
  return bridge;
};

const withBlockType = (type: string, text = 'hi'): string =>
  JSON.stringify({
    model: 'composer-2',
    max_tokens: 100,
    messages: [{ role: 'user', content: [{ type: 'text', text }, { type }] }],
  });

const post = async (url: string, body: string) => {
  const response = await fetch(`${url}/v1/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body,
  });
  await response.arrayBuffer();
  return response.status;
};

describe('log size under hostile input', () => {
  it('logs a 4 MiB unknown block type in a bounded line', async () => {
    const log = memoryLog();
    const { url } = await start(log);
    const type = `x${'y'.repeat(4 * 1024 * 1024)}`;
    expect(await post(url, withBlockType(type))).toBe(200);
    expect(log.bytes()).toBeLessThan(4096);
    const warning = log.records().find((record) => record['msg'] === 'tolerated unsupported input');
    expect(JSON.stringify(warning)).toMatch(/xyyy.*…\[\+\d+ of \d+ chars\]/);
  });

  it('logs a 4 MiB invalid field of a rejected request in a bounded line', async () => {
    const log = memoryLog();
    const { url } = await start(log);
    const body = JSON.stringify({
      model: 'composer-2',
      max_tokens: 'z'.repeat(4 * 1024 * 1024),
      messages: [],
    });
    expect(await post(url, body)).toBe(400);
    expect(log.records().some((record) => record['msg'] === 'rejected invalid request')).toBe(true);
    expect(log.bytes()).toBeLessThan(4096);
  });

  it('bounds every string and array of any log line (the safety net)', () => {
    const log = memoryLog();
    const logger = createLogger({ level: 'info', destination: log.destination });
    logger.info(
      {
        nested: { deep: { value: 'v'.repeat(1_000_000) } },
        list: Array.from({ length: 10_000 }, () => 'n'),
      },
      'line',
    );
    expect(log.bytes()).toBeLessThan(4096);
    const [record] = log.records();
    expect(String((record?.['nested'] as { deep: { value: string } }).deep.value)).toMatch(
      /^v{1000}…\[\+999000 of 1000000 chars\]$/,
    );
    expect(record?.['list']).toHaveLength(51);
    const small = { a: 'short', b: [1, 2] };
    expect(boundLogFields(small)).toBe(small);
  });
});

describe('repeated warnings', () => {
  it('logs a warning code once, then the count of its repeats once per window', async () => {
    const log = memoryLog();
    const { url } = await start(log, 300);
    // The windows run on timers the test advances: however long the requests take, a window ends only
    // when the test says so. Only `setTimeout` is faked, once the server is up; nothing these requests
    // do waits on one.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      for (let index = 0; index < 30; index++)
        expect(await post(url, withBlockType(`odd_${index}`, `m${index}`))).toBe(200);
      const warnings = () => log.records().filter((record) => String(record['msg']).startsWith('tolerated'));
      expect(warnings()).toHaveLength(1);
      // The count comes at the end of the window, not before.
      vi.advanceTimersByTime(299);
      expect(warnings()).toHaveLength(1);
      vi.advanceTimersByTime(1);
      expect(warnings()).toHaveLength(2);
      expect(warnings()[1]).toMatchObject({ msg: REPEATED_WARNINGS_MESSAGE, repeats: 29 });
      // The count names what it counted: the first five distinct messages of the repeats.
      const examples = warnings()[1]?.['examples'] as string[];
      expect(examples).toHaveLength(5);
      expect(examples.join('\n')).toMatch(/odd_1\b[\s\S]*odd_5\b/);
      // A quiet window forgets the code: the next occurrence is logged in full again.
      vi.advanceTimersByTime(300);
      expect(await post(url, withBlockType('odd_again', 'again'))).toBe(200);
      expect(warnings()).toHaveLength(3);
      expect(JSON.stringify(warnings()[2])).toContain('odd_again');
    } finally {
      vi.useRealTimers();
    }
  });
});
