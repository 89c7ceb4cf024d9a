/**
 * Structure-aware fuzzing of the three turn endpoints, seeded from the real-client fixtures in
 * `test/fixtures/`: each body is a fixture with 1–4 mutations (fields dropped, duplicated, retyped; deep
 * nesting; huge strings; odd unicode) or a text-level fault (truncated, not JSON, wrong content type), sent
 * to the real server, engine and protocols over the scripted upstream. Every answer must be < 500, every
 * non-2xx one a valid envelope of its protocol (status and `error.type` as the official SDKs map them), every
 * 2xx one complete (the protocol's terminal event), and nothing may reach the server's last-resort handler.
 *
 * `CURSOR_BRIDGE_FUZZ_BODIES` (default 2000 per endpoint) and `CURSOR_BRIDGE_FUZZ_SEED` (default: random,
 * printed) reproduce or extend a run; a failure names the seed and the body's index.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logging/logger.js';
import type { ScriptSource, ScriptStep } from '../../src/upstream/scripted/scripted-upstream.js';
import { repoRoot } from '../helpers/repo-root.js';
import { startScriptedBridgeServer } from '../helpers/scripted-bridge-server.js';

const bodiesPerEndpoint = Number(process.env['CURSOR_BRIDGE_FUZZ_BODIES'] ?? 2000);
const seed = Number(process.env['CURSOR_BRIDGE_FUZZ_SEED'] ?? Math.floor(Math.random() * 2 ** 31));
const concurrency = 8;

/** mulberry32: small, fast, and the same sequence for the same seed. */
const createRandom = (start: number) => {
  let state = start >>> 0;
  const next = (): number => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (max: number): number => Math.floor(next() * max);
  const pick = <T>(items: readonly T[]): T => items[int(items.length)] as T;
  return { next, int, pick };
};
type Random = ReturnType<typeof createRandom>;

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

const oddStrings = [
  '',
  ' ',
  '\u0000',
  '\ud800',
  '\udfff x',
  '\u202e\u2066rtl',
  '👩‍👩‍👧‍👦'.repeat(20),
  'e\u0301\u0301\u0301',
  '\r\n\t',
  '{"not":"an object"}',
  '[object Object]',
  '__proto__',
  'constructor',
  'toString',
  'toolu_01',
  'call_1',
  'data:image/png;base64,%%%',
  'https://127.0.0.1:1/x.png',
  'a'.repeat(300),
];

const oddValues = (random: Random): Json[] => [
  null,
  true,
  false,
  0,
  -1,
  1e308,
  -1e-308,
  2 ** 53 + 1,
  0.5,
  random.pick(oddStrings),
  [],
  {},
  [null],
  { type: random.pick(['text', 'image', 'tool_use', 'tool_result', 'function_call', 'input_text', 'nope']) },
];

/** Every container path of `value` (dot paths as arrays), for picking a place to mutate. */
const containerPaths = (value: Json): Array<Array<string | number>> => {
  const paths: Array<Array<string | number>> = [];
  const stack: Array<{ at: Json; path: Array<string | number> }> = [{ at: value, path: [] }];
  while (stack.length > 0) {
    const { at, path } = stack.pop() as { at: Json; path: Array<string | number> };
    if (typeof at !== 'object' || at === null) continue;
    paths.push(path);
    if (path.length > 12) continue;
    const entries: Array<[string | number, Json]> = Array.isArray(at)
      ? at.map((item, index) => [index, item])
      : Object.entries(at);
    for (const [key, child] of entries) stack.push({ at: child, path: [...path, key] });
  }
  return paths;
};

const resolve = (root: Json, path: Array<string | number>): Json => {
  let at: Json = root;
  for (const key of path) at = (at as Record<string | number, Json>)[key] as Json;
  return at;
};

/**
 * Deep nesting is spliced in as text after `JSON.stringify` (the fuzzer's own clone and stringify would
 * overflow too): the marker string stands for `levels` nested containers.
 */
const deepMarker = (levels: number): string => `__fuzz_deep_${levels}__`;
const expandDeepMarkers = (text: string, random: Random): { text: string; deepest: number } => {
  let deepest = 0;
  const expanded = text.replace(/"__fuzz_deep_(\d+)__"/g, (_match, count: string) => {
    const levels = Number(count);
    deepest = Math.max(deepest, levels);
    let open = '';
    let close = '';
    for (let level = 0; level < levels; level++) {
      if (random.next() < 0.5) {
        open += '[';
        close = `]${close}`;
      } else {
        open += `{"${random.pick(['properties', 'a', 'items', 'input'])}":`;
        close = `}${close}`;
      }
    }
    return `${open}${JSON.stringify(random.pick(oddValues(random)))}${close}`;
  });
  return { text: expanded, deepest };
};

const hugeString = (random: Random): string => {
  const unit = random.pick(['x', 'é', '\u{1f600}', '\\', '"', '\n', '\ud800']);
  return unit.repeat(random.pick([1_000, 20_000, 200_000]));
};

/** One structural mutation, in place, somewhere in `root`. */
const mutate = (root: Json, random: Random): void => {
  const paths = containerPaths(root);
  const path = random.pick(paths);
  const container = resolve(root, path) as Json[] | Record<string, Json>;
  const keys: Array<string | number> = Array.isArray(container)
    ? container.map((_item, index) => index)
    : Object.keys(container);
  const key = keys.length > 0 ? random.pick(keys) : undefined;
  const set = (value: Json): void => {
    if (Array.isArray(container)) container[typeof key === 'number' ? key : 0] = value;
    else container[typeof key === 'string' ? key : random.pick(oddStrings)] = value;
  };
  const current = key === undefined ? undefined : (container as Record<string | number, Json>)[key];
  switch (random.int(9)) {
    case 0: // drop
      if (key === undefined) return;
      if (Array.isArray(container)) container.splice(key as number, 1);
      else delete container[key as string];
      return;
    case 1: // duplicate
      if (key === undefined || current === undefined) return;
      if (Array.isArray(container)) container.splice(key as number, 0, structuredClone(current));
      else container[`${String(key)}${random.pick(['', '_2', ' '])}`] = structuredClone(current);
      return;
    case 2: // retype
    case 3:
      set(random.pick(oddValues(random)));
      return;
    case 4: // deep nesting, over or under the limit
      set(deepMarker(random.pick([10, 60, 63, 64, 65, 200, 3000])));
      return;
    case 5: // huge string
      set(hugeString(random));
      return;
    case 6: // unicode in a string
      set(`${typeof current === 'string' ? current : ''}${random.pick(oddStrings)}`);
      return;
    case 7: // a container swapped for the other kind
      set(
        Array.isArray(current)
          ? Object.fromEntries(current.map((item, index) => [index, item]))
          : [current ?? null],
      );
      return;
    default: // an unknown field
      if (!Array.isArray(container))
        container[random.pick(['x_unknown', 'type', 'role', 'stream', 'model', 'id'])] = random.pick(
          oddValues(random),
        );
  }
};

/**
 * One fuzzed request. `tooDeep`: the body holds nesting spliced in at 64+ levels below some container, so
 * it is over the bridge's limit of 64 and must be refused (400) whatever else is wrong with it.
 */
type Case = { body: string; headers: Record<string, string>; tooDeep: boolean };

/** Client headers the bridge reads (session identity, betas, Codex/OpenCode ids), with odd values. */
const fuzzHeaders = (random: Random): Record<string, string> => {
  const headers: Record<string, string> = {};
  const names = [
    'x-claude-code-session-id',
    'anthropic-beta',
    'anthropic-version',
    'session_id',
    'x-session-affinity',
    'conversation_id',
    'openai-beta',
    'user-agent',
  ];
  const values = [
    '',
    ' ',
    'sess-1',
    'x'.repeat(8_000),
    'a,b,,c',
    '\u00e9\u00ff',
    'null',
    '{"a":1}',
    'interleaved-thinking-2025-05-14',
  ];
  for (let count = random.int(3); count > 0; count--) headers[random.pick(names)] = random.pick(values);
  return headers;
};

/** A fuzzed request: mostly structural, some text-level faults. */
const createCase = (seeds: readonly Json[], random: Random): Case => {
  const body = structuredClone(random.pick(seeds));
  const mutations = 1 + random.int(4);
  for (let count = 0; count < mutations; count++) mutate(body, random);
  if (typeof body === 'object' && body !== null && !Array.isArray(body) && random.next() < 0.5) {
    body['stream'] = random.next() < 0.5;
  }
  const expanded = expandDeepMarkers(JSON.stringify(body), random);
  let text = expanded.text;
  let contentType = 'application/json';
  const fault = random.next();
  if (fault < 0.04) text = text.slice(0, random.int(text.length));
  else if (fault < 0.06)
    text = random.pick(['', 'null', '[]', '"text"', '{', 'garbage', '\ufeff{}', '{"a":1,"a":2}']);
  else if (fault < 0.08) contentType = random.pick(['text/plain', 'application/x-www-form-urlencoded', '']);
  else if (fault < 0.09) text = `\ufeff${text}`;
  const headers = { ...fuzzHeaders(random), ...(contentType === '' ? {} : { 'content-type': contentType }) };
  return { body: text, headers, tooDeep: expanded.deepest >= 64 && text.length === expanded.text.length };
};

type Envelope = { type?: unknown; error?: { type?: unknown; message?: unknown } };

const anthropicTypes: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
};
const openaiTypes: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'invalid_request_error',
  403: 'invalid_request_error',
  404: 'invalid_request_error',
  413: 'invalid_request_error',
  429: 'rate_limit_error',
};

type Endpoint = {
  name: string;
  path: string;
  fixtures: string;
  /** The error envelope's `error.type` for a status, as the protocol's SDK reads it. */
  errorType: (status: number, envelope: Envelope) => boolean;
  /** A 2xx answer is complete: its terminal event (streamed) or its final object. */
  complete: (text: string, streamed: boolean) => boolean;
};

const endpoints: Endpoint[] = [
  {
    name: 'Anthropic Messages',
    path: '/v1/messages',
    fixtures: 'anthropic',
    errorType: (status, envelope) =>
      envelope.type === 'error' && envelope.error?.type === anthropicTypes[status],
    complete: (text, streamed) =>
      streamed
        ? text.includes('event: message_stop')
        : (JSON.parse(text) as { type?: unknown }).type === 'message',
  },
  {
    name: 'OpenAI Chat',
    path: '/v1/chat/completions',
    fixtures: 'openai-chat',
    errorType: (status, envelope) => envelope.error?.type === openaiTypes[status],
    complete: (text, streamed) =>
      streamed
        ? text.trimEnd().endsWith('data: [DONE]')
        : (JSON.parse(text) as { object?: unknown }).object === 'chat.completion',
  },
  {
    name: 'OpenAI Responses',
    path: '/v1/responses',
    fixtures: 'openai-responses',
    errorType: (status, envelope) => envelope.error?.type === openaiTypes[status],
    complete: (text, streamed) =>
      streamed
        ? text.includes('event: response.completed') || text.includes('event: response.incomplete')
        : ['completed', 'incomplete'].includes(String((JSON.parse(text) as { status?: unknown }).status)),
  },
];

const loadSeeds = (folder: string): Json[] => {
  const directory = join(repoRoot, 'test', 'fixtures', folder);
  return readdirSync(directory)
    .filter((name) => name.endsWith('.request.json'))
    .map((name) => JSON.parse(readFileSync(join(directory, name), 'utf8')) as Json);
};

const textTurn: ScriptStep[] = [
  { type: 'text-delta', text: 'fuzzed ' },
  { type: 'text-delta', text: 'answer' },
  { type: 'usage', usage: { inputTokens: 3, outputTokens: 2, cacheReadTokens: 0, cacheWriteTokens: 0 } },
  { type: 'end', status: 'finished' },
];

/**
 * The upstream's answers: text, or (every third run that has host tools) reasoning and a call of one of the
 * request's own tools, parked until a later body carries its result, then text that echoes the result.
 */
const fuzzScript: ScriptSource = (input, runIndex) => {
  const tool = input.tools[runIndex % Math.max(1, input.tools.length)];
  if (tool === undefined || runIndex % 3 !== 0) return textTurn;
  return [
    { type: 'reasoning-delta', text: 'Considering a tool.' },
    { type: 'reasoning-end' },
    {
      type: 'tool-call',
      toolCallId: `toolu_fuzz_${runIndex}`,
      toolName: tool.name,
      input:
        tool.kind === 'custom' ? { input: '*** Begin Patch\n*** End Patch' } : { command: 'ls', path: '.' },
    },
    { type: 'tool-batch-end' },
    { type: 'await-tool-results' },
    {
      type: 'emit',
      events: ({ toolResults }) => [
        {
          type: 'text-delta',
          text: `Result: ${JSON.stringify(toolResults[0]?.content ?? null).slice(0, 100)}`,
        },
        { type: 'end', status: 'finished' },
      ],
    },
  ];
};

/** The server's log at `info`: every line's size, and the lines that name a handler failure. */
const log = { lines: 0, bytes: 0, longest: 0, failures: [] as string[] };
/** No line may grow with the request (before, the fuzz run's log reached 1.45 GB with a 25 MB line). */
const maxLogLineBytes = 4096;
let bridge: Awaited<ReturnType<typeof startScriptedBridgeServer>>;
beforeAll(async () => {
  const logger = createLogger({
    level: 'info',
    destination: {
      write: (line: string) => {
        log.lines += 1;
        log.bytes += line.length;
        log.longest = Math.max(log.longest, line.length);
        if (line.includes('request handler failed')) log.failures.push(line.slice(0, 2000));
      },
    },
  });
  bridge = await startScriptedBridgeServer(fuzzScript, { logger });
  console.log(
    `fuzz: seed ${seed}, ${bodiesPerEndpoint} bodies per endpoint (CURSOR_BRIDGE_FUZZ_SEED to reproduce)`,
  );
});
afterAll(async () => {
  await bridge?.close();
});

describe.each(endpoints)('fuzzing $name', (endpoint) => {
  it(`answers ${bodiesPerEndpoint} mutated client bodies with no 5xx and only valid envelopes`, async () => {
    const seeds = loadSeeds(endpoint.fixtures);
    expect(seeds.length).toBeGreaterThan(0);
    const random = createRandom(seed ^ endpoint.path.length);
    // Each body is made when a worker takes it (in index order, so a seed always gives the same bodies):
    // making them all first would block the event loop long enough for idle keep-alive sockets to race.
    let overDeep = 0;
    const failures: string[] = [];
    const statuses = new Map<number, number>();
    let toolCalls = 0;
    const startedAt = performance.now();
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < bodiesPerEndpoint) {
        const index = next++;
        const { body, headers, tooDeep } = createCase(seeds, random);
        if (tooDeep) overDeep += 1;
        const fail = (why: string): void =>
          void failures.push(`seed ${seed} body #${index}: ${why}; body: ${body.slice(0, 300)}`);
        try {
          const response = await fetch(`${bridge.url}${endpoint.path}`, {
            method: 'POST',
            headers,
            body,
          });
          const text = await response.text();
          statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
          if (text.includes('toolu_fuzz_')) toolCalls += 1;
          if (response.status >= 500) fail(`status ${response.status}: ${text.slice(0, 300)}`);
          else if (tooDeep && (response.status !== 400 || !text.includes('nested deeper than 64'))) {
            fail(`over-deep body answered ${response.status}: ${text.slice(0, 300)}`);
          } else if (response.status >= 200 && response.status < 300) {
            const streamed = (response.headers.get('content-type') ?? '').startsWith('text/event-stream');
            if (!endpoint.complete(text, streamed))
              fail(`incomplete ${response.status}: ${text.slice(-300)}`);
          } else {
            let envelope: Envelope;
            try {
              envelope = JSON.parse(text) as Envelope;
            } catch {
              fail(`status ${response.status} without a JSON envelope: ${text.slice(0, 300)}`);
              continue;
            }
            if (
              !endpoint.errorType(response.status, envelope) ||
              typeof envelope.error?.message !== 'string'
            ) {
              fail(`status ${response.status} with a wrong envelope: ${text.slice(0, 300)}`);
            }
          }
        } catch (error) {
          fail(`request failed: ${String(error)}`);
        }
      }
    };
    await Promise.all(Array.from({ length: concurrency }, worker));
    const seconds = (performance.now() - startedAt) / 1000;
    console.log(
      `fuzz ${endpoint.path}: ${bodiesPerEndpoint} bodies in ${seconds.toFixed(1)} s ` +
        `(${Math.round(bodiesPerEndpoint / seconds)}/s), ${overDeep} over-deep, ${toolCalls} answered with a tool call, ` +
        `statuses ${JSON.stringify(Object.fromEntries(statuses))}`,
    );
    expect(failures.slice(0, 5)).toEqual([]);
    console.log(`fuzz log so far: ${log.lines} lines, ${log.bytes} bytes, longest ${log.longest} bytes`);
    expect(log.failures).toEqual([]);
    expect(log.longest).toBeLessThanOrEqual(maxLogLineBytes);
  }, 360_000);
});
