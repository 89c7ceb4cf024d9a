/**
 * Identity + trailing-turn classification cost per request on a Claude-Code-shaped transcript, alone and
 * with the engine's per-message planning digests (together: the whole analysis the engine runs on every
 * request before it plans the turn). Two transcripts: 2 MB in 600 turns (1226 messages), and the same
 * conversation cut to 500 messages. Run from the repo with Node 22 first on PATH:
 *
 *   node --import tsx bench/identity.bench.ts
 *
 * Every measured request is a fresh object graph (as a newly parsed HTTP body is), built before timing, and
 * every sample is a different conversation (its user texts differ), so nothing is memoised from an earlier
 * sample. Budget: ≤ 5 ms per request.
 */

import { performance } from 'node:perf_hooks';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { computeIdentity } from '../src/engine/identity/conversation-identity.js';
import { messageDigest } from '../src/engine/transcript-digest.js';
import { classifyTrailingTurn } from '../src/engine/turn-classifier.js';
import type { TurnMessage, TurnRequest } from '../src/turn/turn-request.js';

// Collect garbage before each timed sample so a collection of earlier samples is not billed to it.
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

const targetBytes = 2 * 1024 * 1024;
/** The 2 MB transcript's turns; the shorter transcript is the same conversation cut to 500 messages. */
const turns = 600;
const shortTurns = 245;
const iterations = 40;

const filler = (length: number, seed: number): string => {
  const words = [
    'alpha',
    'beta',
    'gamma',
    'delta',
    'const',
    'return',
    'import',
    'value',
    'index',
    'error',
    'Map<K, V>',
  ];
  let text = '';
  for (let index = seed; text.length < length; index += 1) text += `${words[index % words.length]} `;
  return text.slice(0, length);
};

const reminder = (date: string): string =>
  `<system-reminder>\nAs you answer the user's questions, you can use the following context:\n# currentDate\nToday's date is ${date}.\n</system-reminder>\n\n`;

/** One assistant tool call and its result; every 25th turn the user also steers. */
const turn = (index: number, resultBytes: number, userBytes: number, seed = 0): TurnMessage[] => {
  const id = `toolu_${String(index).padStart(6, '0')}`;
  const messages: TurnMessage[] = [
    {
      role: 'assistant',
      content: [
        { type: 'text', text: `Step ${index}: ${filler(160, index)}` },
        { type: 'tool-call', toolCallId: id, toolName: 'Bash', input: { command: `grep -rn ${index} src/` } },
      ],
    },
    {
      role: 'tool',
      toolCallId: id,
      content: [{ type: 'text', text: filler(resultBytes, index) }],
      isError: false,
    },
  ];
  if (index % 25 === 24) {
    messages.push({
      role: 'user',
      content: [
        { type: 'text', text: reminder('2026-11-29') },
        { type: 'text', text: `Also (${seed}) ${filler(userBytes, index)}` },
      ],
    });
  }
  return messages;
};

const buildRequest = (options: {
  native: boolean;
  resultBytes: number;
  userBytes: number;
  turns: number;
  seed: number;
}): TurnRequest => ({
  protocol: 'anthropic',
  model: 'claude-opus-4-8',
  system: [
    { type: 'text', text: "You are a Claude agent, built on Anthropic's Claude Agent SDK." },
    { type: 'text', text: filler(7_000, 1) },
  ],
  messages: [
    {
      role: 'user',
      content: [
        { type: 'text', text: reminder('2026-11-29') },
        { type: 'text', text: `Refactor the session registry and add tests (${options.seed}).` },
      ],
    },
    { role: 'system', content: [{ type: 'text', text: filler(9_000, 2) }] },
    ...Array.from({ length: options.turns }, (_, index) =>
      turn(index, options.resultBytes, options.userBytes, options.seed),
    ).flat(),
  ],
  tools: [{ kind: 'function', name: 'Bash', inputSchema: { type: 'object' } }],
  toolChoice: { type: 'auto' },
  reasoning: { requested: true },
  stream: true,
  includeStreamUsage: true,
  identity: options.native
    ? { nativeSessionId: { value: 'a1e5998a-797c-4922-af20-866a493bdddf', source: 'metadata.user_id' } }
    : {},
  headers: {},
  warnings: [],
});

/** Tool-result size that makes the transcript about 2 MB. */
const calibrate = (userBytes: number): number => {
  const probe = JSON.stringify(
    buildRequest({ native: true, resultBytes: 0, userBytes, turns, seed: 0 }),
  ).length;
  return Math.max(0, Math.floor((targetBytes - probe) / turns));
};

const analyse = (request: TurnRequest): void => {
  classifyTrailingTurn(request);
  computeIdentity(request);
  if (withDigests) request.messages.map(messageDigest);
};

/** Also time the engine's per-message transcript digests (the resume / slim / replay planning), as the engine does. */
let withDigests = false;

/** Seeds are never reused, across samples and scenarios alike: every sample is a new conversation. */
let nextSeed = 0;

/**
 * Times identity + classification of `sample(seed).request` for fresh object graphs. `prime`, when given,
 * is analysed first, untimed — the previous request of the same conversation.
 */
const measure = (
  label: string,
  sample: (seed: number) => { prime?: TurnRequest; request: TurnRequest },
): void => {
  const times: number[] = [];
  let bytes = 0;
  let count = 0;
  for (let index = 0; index <= iterations; index += 1) {
    const { prime, request } = sample(nextSeed);
    nextSeed += 1;
    if (prime !== undefined) analyse(prime);
    bytes = JSON.stringify(request).length;
    count = request.messages.length;
    gc();
    const started = performance.now();
    analyse(request);
    times.push(performance.now() - started);
  }
  const [first, ...rest] = times;
  const sorted = [...rest].sort((a, b) => a - b);
  const at = (quantile: number): string =>
    (sorted[Math.floor(sorted.length * quantile)] ?? Number.NaN).toFixed(2);
  console.log(
    `${label.padEnd(66)} ${(bytes / 1024 / 1024).toFixed(2)} MB ${String(count).padStart(4)} msgs | ` +
      `cold ${first?.toFixed(2)} ms | median ${at(0.5)} ms | p90 ${at(0.9)} ms`,
  );
};

const followUp = (request: TurnRequest, index: number, seed: number): TurnRequest => ({
  ...request,
  messages: [...request.messages, ...turn(index, 3_000, 200, seed)],
});

/** A fresh object graph, as a newly parsed HTTP body is. */
const clone = (request: TurnRequest): TurnRequest => structuredClone(request);

const scenarios = (name: string, count: number, build: (seed: number) => TurnRequest): void => {
  measure(`${name}: first request`, (seed) => ({ request: build(seed) }));
  measure(`${name}: follow-up with one new turn`, (seed) => {
    const previous = build(seed);
    return { prime: previous, request: clone(followUp(previous, count, seed)) };
  });
};

const userBytes = 200;
const resultBytes = calibrate(userBytes);
// Worst case for the anonymous path: the 2 MB is mostly user text (pasted logs), every text hashed.
const steering = Math.floor(turns / 25);
const heavyUserBytes = Math.floor(
  (targetBytes -
    JSON.stringify(buildRequest({ native: false, resultBytes: 200, userBytes: 0, turns, seed: 0 })).length) /
    steering,
);

for (const digests of [false, true]) {
  withDigests = digests;
  console.log(digests ? '\nidentity + classification + planning digests' : 'identity + classification');
  for (const count of [turns, shortTurns]) {
    const size = count === turns ? '2 MB' : '500 msgs';
    scenarios(`${size}, native id`, count, (seed) =>
      buildRequest({ native: true, resultBytes, userBytes, turns: count, seed }),
    );
    scenarios(`${size}, no native id`, count, (seed) =>
      buildRequest({ native: false, resultBytes, userBytes, turns: count, seed }),
    );
    scenarios(`${size}, no native id, mostly user text`, count, (seed) =>
      buildRequest({ native: false, resultBytes: 200, userBytes: heavyUserBytes, turns: count, seed }),
    );
  }
}
