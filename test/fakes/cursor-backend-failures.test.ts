import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { SDKCustomTool } from '@cursor/sdk';

import { FakeStreamClosedError, startSdkTestEnv } from './cursor-backend/index.js';
import type { FakeToolResult, SdkTestEnv } from './cursor-backend/index.js';

describe('fake Cursor backend: failures seen by the real @cursor/sdk', () => {
  let env: SdkTestEnv;

  beforeAll(async () => {
    env = await startSdkTestEnv({ heartbeatMs: 1000 });
  });

  afterAll(async () => {
    await env?.cleanup();
  });

  it('rejects Agent.create with AuthenticationError when the key is refused', async () => {
    env.backend.setAuth('reject');
    try {
      const error: unknown = await env.sdk.Agent.create({
        model: { id: 'composer-2' },
        local: { cwd: env.workspace },
      }).then(
        () => undefined,
        (rejection: unknown) => rejection,
      );
      expect(error).toBeInstanceOf(env.sdk.AuthenticationError);
      expect(error).toMatchObject({
        message: 'Invalid API key (fake)',
        status: 401,
        code: 'unauthenticated',
      });
    } finally {
      env.backend.setAuth('ok');
    }
  });

  it('reports a mid-run unauthenticated error as status ERROR at once (not retried)', async () => {
    const before = env.backend.runRequests.length;
    env.backend.setScenario((run) => {
      run.text('partial');
      run.fail('token revoked', 'unauthenticated');
    });
    const agent = await env.sdk.Agent.create({ model: { id: 'composer-2' }, local: { cwd: env.workspace } });
    const run = await agent.send('hi');
    const statuses: string[] = [];
    for await (const message of run.stream()) if (message.type === 'status') statuses.push(message.status);
    const result = await run.wait();
    await agent[Symbol.asyncDispose]();
    expect(statuses).toEqual(['RUNNING', 'ERROR']);
    expect(result).toMatchObject({ status: 'error', error: { message: '[unauthenticated] token revoked' } });
    expect(env.backend.runRequests.length - before).toBe(1);
  });

  it('reports a mid-run internal error as status ERROR without retries when enableAgentRetries is false', async () => {
    const before = env.backend.runRequests.length;
    // `internal` is retried 3 times (≈16 s) by default; enableAgentRetries:false makes it final at once.
    env.backend.setScenario((run) => run.fail('model exploded'));
    const agent = await env.sdk.Agent.create({
      model: { id: 'composer-2' },
      local: { cwd: env.workspace, enableAgentRetries: false },
    });
    const result = await (await agent.send('hi')).wait();
    await agent[Symbol.asyncDispose]();
    expect(result).toMatchObject({ status: 'error', error: { message: '[internal] model exploded' } });
    // One attempt, then the final status: no retry was made.
    expect(env.backend.runRequests.length - before).toBe(1);
  });

  it('reports a conversation over the context window as status ERROR at once, with only the title and detail left', async () => {
    const before = env.backend.runRequests.length;
    env.backend.setScenario((run) => run.failConversationTooLong());
    // Default enableAgentRetries: without `isRetryable: false` in the details a resource_exhausted
    // trailer would be retried 3 times (≈16 s); the details make it final at once.
    const agent = await env.sdk.Agent.create({ model: { id: 'composer-2' }, local: { cwd: env.workspace } });
    const run = await agent.send('a very long conversation');
    const statuses: Array<{ status: string; message?: string | undefined }> = [];
    for await (const message of run.stream()) {
      if (message.type === 'status') statuses.push({ status: message.status, message: message.message });
    }
    const result = await run.wait();
    await agent[Symbol.asyncDispose]();
    const message =
      'Conversation too long Your conversation is too long. Please try creating a new conversation or shortening your messages.';
    expect(statuses).toEqual([{ status: 'RUNNING' }, { status: 'ERROR', message }]);
    // No `[resource_exhausted]` prefix and no code: the SDK keeps only `${title} ${detail}`.
    expect(result).toMatchObject({ status: 'error', error: { message } });
    expect(result.error).not.toHaveProperty('code');
    expect(env.backend.runRequests.length - before).toBe(1);
  });

  it('fails the run fast when a scenario throws, and records the error', async () => {
    const before = env.backend.scenarioErrors.length;
    env.backend.setScenario(() => {
      throw new Error('oops');
    });
    const agent = await env.sdk.Agent.create({ model: { id: 'composer-2' }, local: { cwd: env.workspace } });
    const result = await (await agent.send('hi')).wait();
    await agent[Symbol.asyncDispose]();
    expect(result).toMatchObject({
      status: 'error',
      error: { message: '[permission_denied] fake scenario threw: oops' },
    });
    expect(env.backend.scenarioErrors.slice(before)).toEqual([new Error('oops')]);
  });

  it('re-sends the run after a dropped stream and calls execute again with the same toolCallId', async () => {
    const before = env.backend.runRequests.length;
    const attempts: FakeToolResult[][] = [];
    let firstExecuteStarted: () => void = () => undefined;
    const firstExecute = new Promise<void>((resolve) => (firstExecuteStarted = resolve));
    env.backend.setScenario(async (run) => {
      run.text('calling');
      const pending = run.toolCall({ toolName: 'slow', args: { n: 1 }, callId: 'toolu_dup' });
      if (run.request.index === before) {
        // First attempt: drop the connection once execute runs (it stays pending until the retry).
        await firstExecute;
        run.disconnect();
        await expect(pending).rejects.toBeInstanceOf(FakeStreamClosedError);
        return;
      }
      attempts.push([await pending]);
      run.text('done');
      run.turnEnded();
    });
    const calls: Array<string | undefined> = [];
    let releaseFirst: (() => void) | undefined;
    const slow: SDKCustomTool = {
      execute: async (_args, context) => {
        calls.push(context.toolCallId);
        if (calls.length === 1) {
          firstExecuteStarted();
          // Hold the first call until the retry has called execute again.
          await new Promise<void>((resolve) => (releaseFirst = resolve));
          return 'late first result';
        }
        releaseFirst?.();
        return 'second result';
      },
    };
    const agent = await env.sdk.Agent.create({ model: { id: 'composer-2' }, local: { cwd: env.workspace } });
    const deltas: string[] = [];
    const run = await agent.send('go', {
      local: { customTools: { slow } },
      onDelta: ({ update }) => void (update.type === 'text-delta' && deltas.push(update.text)),
    });
    const result = await run.wait();
    await agent[Symbol.asyncDispose]();

    expect(calls).toEqual(['toolu_dup', 'toolu_dup']);
    expect(attempts).toEqual([
      [
        {
          callId: 'toolu_dup',
          toolCallId: 'toolu_dup',
          status: 'success',
          content: [{ type: 'text', text: 'second result' }],
          isError: false,
        },
      ],
    ]);
    // The retry replays the run: text already streamed arrives again.
    expect(deltas).toEqual(['calling', 'calling', 'done']);
    expect(result).toMatchObject({ status: 'finished', result: 'done' });
    expect(env.backend.runRequests.slice(before).map((request) => request.actionKind)).toEqual([
      'userMessageAction',
      'userMessageAction',
    ]);
  }, 60_000);

  it('cancels a run with a pending execute: the stream closes, execute is abandoned, the agent is reusable', async () => {
    let scenarioSaw: unknown;
    env.backend.setScenario(async (run) => {
      try {
        await run.toolCall({ toolName: 'never', callId: 'toolu_parked' });
      } catch (error) {
        scenarioSaw = error;
      }
    });
    let executeStarted: () => void = () => undefined;
    const started = new Promise<void>((resolve) => (executeStarted = resolve));
    let executeSettled = false;
    // Opened only after the run was cancelled and its result read: a cancel that waited for execute
    // would hang here until the test times out.
    let releaseExecute: () => void = () => undefined;
    const executeReleased = new Promise<void>((resolve) => (releaseExecute = resolve));
    const never: SDKCustomTool = {
      execute: async () => {
        executeStarted();
        await executeReleased;
        executeSettled = true;
        return 'too late';
      },
    };
    const agent = await env.sdk.Agent.create({ model: { id: 'composer-2' }, local: { cwd: env.workspace } });
    const run = await agent.send('park', { local: { customTools: { never } } });
    await started;
    await run.cancel();
    const result = await run.wait();
    expect(result.status).toBe('cancelled');
    expect(executeSettled).toBe(false);
    await expect.poll(() => scenarioSaw, { timeout: 30_000 }).toBeInstanceOf(FakeStreamClosedError);
    releaseExecute();

    env.backend.setScenario((next) => {
      next.text('fresh');
      next.turnEnded();
    });
    const again = await (await agent.send('again')).wait();
    await agent[Symbol.asyncDispose]();
    expect(again).toMatchObject({ status: 'finished', result: 'fresh' });
  });
});
