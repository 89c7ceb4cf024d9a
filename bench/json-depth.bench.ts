/**
 * The cost of the JSON depth limit on a 2 MB, 600-turn Claude-Code-shaped request body (the real Claude
 * Code 2.1.332 request from `test/fixtures/` with 600 tool round trips appended): the linear text scan
 * every body gets before `JSON.parse`, beside `JSON.parse` itself, and the iterative walk the CCR facade
 * runs on an already-parsed body. Run from the repo with Node 22 first on PATH:
 *
 *   node --import tsx bench/json-depth.bench.ts
 *
 * Budget: the scan at most half of `JSON.parse` on the same text.
 */

import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { findJsonTextDepthExcess, findValueDepthExcess } from '../lib/json-depth.js';

const fixture = JSON.parse(
  readFileSync(
    new URL('../test/fixtures/anthropic/claude-code-2.1.332.request.json', import.meta.url),
    'utf8',
  ),
) as { messages: unknown[] };

const turns = 600;
const targetBytes = 2 * 1024 * 1024;
const line = 'export const value = "caf\\u00e9"; // {not: [json]} \\"quoted\\"\n\t';

const build = (resultChars: number): string =>
  JSON.stringify({
    ...fixture,
    messages: [
      ...fixture.messages,
      ...Array.from({ length: turns }, (_, index) => {
        const id = `toolu_${String(index).padStart(6, '0')}`;
        return [
          {
            role: 'assistant',
            content: [
              { type: 'text', text: `Step ${index}: let me look at the file.` },
              {
                type: 'tool_use',
                id,
                name: 'Bash',
                input: { command: `grep -rn ${index} src/`, timeout: 1000 },
              },
            ],
          },
          {
            role: 'user',
            content: [
              { type: 'tool_result', tool_use_id: id, content: line.repeat(resultChars / line.length) },
            ],
          },
        ];
      }).flat(),
    ],
  });

const probe = build(0).length;
const text = build(Math.max(0, Math.floor((targetBytes - probe) / turns)));
const value: unknown = JSON.parse(text);

const median = (run: () => unknown, iterations = 60): number => {
  for (let warm = 0; warm < 10; warm++) run();
  const samples: number[] = [];
  for (let index = 0; index < iterations; index++) {
    const started = performance.now();
    run();
    samples.push(performance.now() - started);
  }
  samples.sort((a, b) => a - b);
  return samples[Math.floor(samples.length / 2)] ?? Number.NaN;
};

const scan = median(() => findJsonTextDepthExcess(text));
const parse = median(() => JSON.parse(text));
const walk = median(() => findValueDepthExcess(value));
console.log(`body ${(text.length / 1024 / 1024).toFixed(2)} MB`);
console.log(`depth scan (text)  ${scan.toFixed(2)} ms median`);
console.log(
  `JSON.parse         ${parse.toFixed(2)} ms median  (scan = ${((scan / parse) * 100).toFixed(0)}% of parse)`,
);
console.log(`depth walk (value) ${walk.toFixed(2)} ms median  (CCR facade)`);
