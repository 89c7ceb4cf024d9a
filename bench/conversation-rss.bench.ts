/**
 * What one conversation costs a `cursor-bridge serve` process in memory (for docs/scaling.md): RSS of
 * the real CLI (real SDK, fake Cursor backend) idle after a warm-up, then with `BENCH_CONVERSATIONS`
 * (default 32, the session cap) conversations each parked on a tool call, then after their results
 * finished them. RSS is read from /proc/<pid>/status.
 */

import Anthropic from '@anthropic-ai/sdk';
import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { startServeBridge } from '../test/helpers/e2e/serve-bridge.js';

const conversations = Number(process.env['BENCH_CONVERSATIONS'] ?? 32);

const bridge = await startServeBridge({
  scenario: { turns: [] },
  shell: { name: 'Bash', input: (command) => ({ command }) },
  backendScenario: async (run) => {
    if (run.prompt.includes('park')) {
      const [result] = await run.toolCalls([{ toolName: 'Bash', args: { command: 'echo parked' } }]);
      run.text(`done ${result?.status ?? ''}`);
    } else {
      run.text('warm');
    }
    run.turnEnded({ inputTokens: 10, outputTokens: 1 });
  },
  env: { LOG_LEVEL: 'warn' },
});

const rssMb = async (): Promise<number> => {
  const status = await readFile(`/proc/${bridge.pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? Number.NaN) / 1024;
};
const settle = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 1_500));
const tools = [{ name: 'Bash', input_schema: { type: 'object' as const, properties: {} } }];
const clientFor = () =>
  new Anthropic({
    baseURL: `http://127.0.0.1:${bridge.port}`,
    apiKey: 'sk-bench',
    maxRetries: 0,
    defaultHeaders: { 'x-claude-code-session-id': randomUUID() },
  });

try {
  for (let index = 0; index < 4; index += 1) {
    await clientFor()
      .messages.stream({
        model: 'composer-2',
        max_tokens: 10,
        messages: [{ role: 'user', content: `warm ${index}` }],
      })
      .finalMessage();
  }
  await settle();
  const idle = await rssMb();

  const parked = await Promise.all(
    Array.from({ length: conversations }, async (_, index) => {
      const client = clientFor();
      const messages: Anthropic.MessageParam[] = [{ role: 'user', content: `park ${index}` }];
      const answer = await client.messages
        .stream({ model: 'composer-2', max_tokens: 10, tools, messages })
        .finalMessage();
      return { client, messages, answer };
    }),
  );
  await settle();
  const atPark = await rssMb();

  await Promise.all(
    parked.map(({ client, messages, answer }) => {
      const call = answer.content.find((block) => block.type === 'tool_use');
      return client.messages
        .stream({
          model: 'composer-2',
          max_tokens: 10,
          tools,
          messages: [
            ...messages,
            { role: 'assistant', content: answer.content },
            {
              role: 'user',
              content: [{ type: 'tool_result', tool_use_id: call?.id ?? '', content: 'parked' }],
            },
          ],
        })
        .finalMessage();
    }),
  );
  await settle();
  const after = await rssMb();
  const metrics = await bridge.metrics();

  console.log(
    [
      `RSS idle (after warm-up): ${idle.toFixed(1)} MB`,
      `RSS with ${conversations} conversations parked on a tool call: ${atPark.toFixed(1)} MB ` +
        `(+${(atPark - idle).toFixed(1)} MB, ${((atPark - idle) / conversations).toFixed(2)} MB per conversation)`,
      `RSS after they finished (sessions kept for their next turn): ${after.toFixed(1)} MB`,
      `sessions ${String(metrics['sessions'])}, evicted ${String(metrics['evicted'])}`,
    ].join('\n'),
  );
} finally {
  await bridge.close();
}
