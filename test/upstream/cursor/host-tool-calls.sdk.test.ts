/**
 * One owner of a session's host tool calls, through the REAL `@cursor/sdk` against the fake backend: the
 * Cursor upstream checks each executed call before anything is parked or announced (a call that names the
 * scratch workspace is answered with a correction and never reaches the client), announces the rest under
 * the id the SDK gave, and resumes the run with the client's results.
 */

import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FakeToolResult } from '../../fakes/cursor-backend/run-context.js';
import { startSdkTestEnv, type SdkTestEnv } from '../../fakes/cursor-backend/sdk-test-env.js';
import { CursorUpstream } from '../../../src/upstream/cursor/cursor-upstream.js';
import { InMemoryAgentStore } from '../../../src/upstream/cursor/in-memory-agent-store.js';
import type { UpstreamEvent, UpstreamRunInput } from '../../../src/upstream/upstream-port.js';

let env: SdkTestEnv;
beforeAll(async () => {
  env = await startSdkTestEnv();
});
afterAll(async () => {
  await env?.cleanup();
});

const resultText = (result: FakeToolResult | undefined): string =>
  result?.status === 'success'
    ? `${result.isError ? 'error: ' : ''}${result.content.map((part) => (part.type === 'text' ? part.text : '')).join('')}`
    : String(result?.status);

const bash = {
  name: 'Bash',
  kind: 'function' as const,
  description: 'Run a command',
  inputSchema: { type: 'object', properties: { command: { type: 'string' } } },
};

/** Read events up to and including the next `tool-batch-end` or terminal event. */
const readToBoundary = async (events: AsyncIterator<UpstreamEvent>): Promise<UpstreamEvent[]> => {
  const read: UpstreamEvent[] = [];
  for (;;) {
    const next = await events.next();
    if (next.done === true) return read;
    read.push(next.value);
    if (['tool-batch-end', 'end', 'error'].includes(next.value.type)) return read;
  }
};

describe('host tool calls through the Cursor upstream', () => {
  it('answers a corrected call at once, never parking or announcing it, and resumes with the client result', async () => {
    const received: string[] = [];
    env.backend.setScenario(async (run) => {
      const results = await run.toolCalls(
        [
          { toolName: 'Bash', args: { command: 'ls /scratch/ws' }, callId: 'call-scratch' },
          { toolName: 'Bash', args: { command: 'ls /home/dev/project' }, callId: 'call-host' },
        ],
        { listed: 'after-started' },
      );
      received.push(...results.map(resultText));
      run.text('done');
      run.turnEnded();
    });
    const upstream = new CursorUpstream({
      auth: { ok: true, apiKey: 'crsr_test' },
      logger: pino({ level: 'silent' }),
      mode: 'bridge',
      sandboxEnabled: false,
      createStore: (hooks) => new InMemoryAgentStore(hooks),
      loadSdk: async () => env.sdk,
    });
    const checked: string[] = [];
    const checkToolCall: UpstreamRunInput['checkToolCall'] = (call) => {
      checked.push(call.toolCallId);
      return String(call.input['command']).includes('/scratch/')
        ? { forward: false, correction: 'Use host paths under /home/dev/project.' }
        : { forward: true };
    };
    try {
      const session = await upstream.createSession({ workspaceDir: env.workspace });
      const run = await session.startRun({
        prompt: { text: 'list the project', images: [] },
        tools: [bash],
        model: 'composer-2',
        reasoning: { requested: false },
        checkToolCall,
      });

      const batch = await readToBoundary(run.events);
      expect(batch.filter((event) => event.type === 'tool-call')).toEqual([
        expect.objectContaining({
          type: 'tool-call',
          toolCallId: 'call-host',
          toolName: 'Bash',
          input: { command: 'ls /home/dev/project' },
        }),
      ]);
      expect(batch.at(-1)).toEqual({ type: 'tool-batch-end' });
      expect(checked.sort()).toEqual(['call-host', 'call-scratch']);
      // Only the forwarded call waits for the client.
      expect(run.pendingToolCalls()).toEqual(['call-host']);

      expect(
        run.resolveToolCalls([
          { toolCallId: 'call-host', content: [{ type: 'text', text: 'a.txt' }], isError: false },
        ]),
      ).toEqual({ unknown: [] });
      const rest = await readToBoundary(run.events);
      expect(rest.at(-1)).toEqual({ type: 'end', status: 'finished' });
      expect(received).toEqual(['error: Use host paths under /home/dev/project.', 'a.txt']);
      await session.dispose();
    } finally {
      await upstream.close();
    }
  });
});
