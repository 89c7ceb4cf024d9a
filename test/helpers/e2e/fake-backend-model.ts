/**
 * Plays a {@link ModelScenario} as the fake Cursor backend's {@link Scenario}: one call per
 * `AgentRunRequest` the real SDK sends. A run that offers the client's shell tool is the next turn of
 * the conversation; one that does not is a side request (OpenCode's title call). What each run
 * received back (the SDK's tool results) and how it ended is recorded per run request.
 */

import { receivedImage, type FakeReceivedImage } from '../../fakes/cursor-backend/received-images.js';
import type {
  ConnectErrorCode,
  FakeHostedOutcome,
  FakeRunRequest,
  FakeToolCallSpec,
  FakeToolResult,
  RunContext,
  Scenario,
} from '../../fakes/cursor-backend/index.js';
import { fakeLimitTexts } from '../../fakes/cursor-backend/limit-texts.js';
import {
  resolveModelText,
  type ModelContext,
  type ModelScenario,
  type ModelStep,
  type ShellTool,
} from './model-scenario.js';

/** A tool result as the backend received it, flattened to text. */
export type ReceivedToolResult = {
  toolCallId: string;
  text: string;
  isError: boolean;
  /** The images the result carried, in order. */
  images: FakeReceivedImage[];
};

/** One run request and what the scenario did with it. */
export type PlayedRun = {
  request: FakeRunRequest;
  /** The run offered the client's shell tool. */
  main: boolean;
  /** The 1-based scenario turn it played (main runs only). */
  turn?: number;
  /** The SDK re-sent an earlier run (the same `runId`, or after a retryable failure): the same turn, replayed. */
  replay: boolean;
  toolResults: ReceivedToolResult[];
  /** The hosted searches the run made, with the SDK's approval and the result reported. */
  webSearches: FakeHostedOutcome[];
  /** The run was a search side call, played by {@link ModelScenario.searchSideCall}. */
  searchSideCall?: true;
  /** How the stream ended (`open` while it runs). */
  outcome: 'open' | 'answered' | 'failed' | 'closed-by-client' | 'scenario-error';
  failure?: { message: string; code: ConnectErrorCode; final?: true };
  /** Why the scenario could not play the run (no such turn, …). */
  error?: string;
};

/** A search side call's prompt: Claude Code's WebSearch request, or any run the bridge framed as one. */
const isSearchSideCall = (prompt: string): boolean =>
  prompt.includes('<web_search_task>') || prompt.includes('Perform a web search for the query:');

/** Connect codes the SDK reports at once; after any other failure it re-sends the run request. */
const notRetried: ReadonlySet<ConnectErrorCode> = new Set(['permission_denied', 'unauthenticated']);

const usage = { inputTokens: 120, outputTokens: 25 };

/** The scratch workspace as the bridge's `<bridge_environment>` head names it. */
export const scratchDirOf = (prompt: string): string =>
  /That directory \(([^)]+)\) is an empty scratch workspace/.exec(prompt)?.[1] ?? '';

const toReceived = (result: FakeToolResult, runRequestIndex: number): ReceivedToolResult => {
  switch (result.status) {
    case 'success':
      return {
        toolCallId: result.callId,
        text: result.content.map((part) => (part.type === 'text' ? part.text : '[image]')).join('\n'),
        isError: result.isError,
        images: result.content.flatMap((part) =>
          part.type === 'image'
            ? [
                receivedImage(Buffer.from(part.data, 'base64'), {
                  source: 'tool-result',
                  runRequestIndex,
                  toolCallId: result.toolCallId,
                  ...(part.mimeType === undefined ? {} : { mimeType: part.mimeType }),
                }),
              ]
            : [],
        ),
      };
    case 'error':
      return { toolCallId: result.callId, text: result.error, isError: true, images: [] };
    case 'rejected':
      return {
        toolCallId: result.callId,
        text: `rejected: ${result.reason}`,
        isError: true,
        images: [],
      };
    case 'other':
      return {
        toolCallId: result.callId,
        text: JSON.stringify(result.json),
        isError: true,
        images: [],
      };
  }
};

/** How long a silent step waits for a keepalive before it speaks anyway (and the keepalive check fails). */
const keepaliveSafetyNetMs = 60_000;

/** Resolves once `keepalivesSent()` exceeds its value at the call, the run's stream closes, or the safety net passes. */
const untilKeepalive = (keepalivesSent: () => number, signal: AbortSignal): Promise<void> => {
  const before = keepalivesSent();
  return new Promise((resolve) => {
    const poll = setInterval(() => {
      if (keepalivesSent() > before) done();
    }, 20);
    const safetyNet = setTimeout(done, keepaliveSafetyNetMs);
    function done(): void {
      clearInterval(poll);
      clearTimeout(safetyNet);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
};

export type FakeBackendModel = {
  /** Give this to the fake backend. */
  scenario: Scenario;
  /** Every run request, in arrival order. */
  played: PlayedRun[];
};

/**
 * The fake backend's scenario for `scenario`, with `shell` as the client's shell tool; `keepalivesSent`
 * counts the keepalives the bridge has sent its clients so far (for {@link ModelStep.silentUntilKeepalive}).
 */
export const createFakeBackendModel = (
  scenario: ModelScenario,
  shell: ShellTool,
  keepalivesSent: () => number,
): FakeBackendModel => {
  const played: PlayedRun[] = [];
  let turnsPlayed = 0;

  /** The turn a main run plays: the next one, unless the SDK is re-sending a failed run request. */
  const turnFor = (request: FakeRunRequest): { turn: number; replay: boolean } => {
    // The same run sent again (its `runId`): the SDK re-sends a run after a transport fault or its stall
    // detector too, not only after a retryable error, and a starved machine makes those happen.
    const sameRun = played.find(
      (run) => run.main && run.request !== request && run.request.runId === request.runId,
    );
    if (sameRun?.turn !== undefined) return { turn: sameRun.turn, replay: true };
    const previous = played.filter((run) => run.main && run.request !== request).at(-1);
    const retried =
      previous?.outcome === 'failed' &&
      previous.failure !== undefined &&
      previous.failure.final !== true &&
      !notRetried.has(previous.failure.code) &&
      previous.request.text === request.text;
    if (retried && previous.turn !== undefined) return { turn: previous.turn, replay: true };
    turnsPlayed += 1;
    return { turn: turnsPlayed, replay: false };
  };

  const playStep = async (
    run: RunContext,
    record: PlayedRun,
    step: ModelStep,
    ids: { turn: number; step: number; attempt: number },
  ): Promise<'next' | 'stop'> => {
    const context = (): ModelContext => ({
      workspaceDir: scratchDirOf(run.prompt),
      prompt: run.prompt,
      toolResults: record.toolResults,
    });
    if (step.silentUntilKeepalive === true) await untilKeepalive(keepalivesSent, run.signal);
    if (!run.open) return 'stop';
    if (step.thinking !== undefined) {
      run.thinking(step.thinking);
      run.thinkingCompleted(7);
    }
    for (const search of step.webSearches ?? []) record.webSearches.push(await run.webSearch(search));
    if (step.text !== undefined) run.text(resolveModelText(step.text, context()));
    if (step.fail !== undefined && (step.fail.attempts === undefined || ids.attempt <= step.fail.attempts)) {
      const failure = { message: step.fail.message, code: step.fail.code ?? 'permission_denied' };
      record.outcome = 'failed';
      record.failure = failure;
      run.fail(failure.message, failure.code);
      return 'stop';
    }
    if (step.conversationTooLong === true) {
      record.outcome = 'failed';
      // Final: its ErrorDetails say not retryable, so the SDK never re-sends this run request.
      record.failure = { message: 'conversation too long', code: 'resource_exhausted', final: true };
      run.failConversationTooLong();
      return 'stop';
    }
    if (step.limit !== undefined) {
      const { error, ...options } = step.limit;
      const text = fakeLimitTexts[error];
      // The SDK re-sends only these two, and only while their details say retryable.
      const reSent =
        (error === 'ERROR_API_KEY_RATE_LIMIT' || error === 'ERROR_SUSPICIOUS_USAGE_BLOCKED') &&
        (options.isRetryable ?? text.kind === 'rate');
      record.outcome = 'failed';
      record.failure = {
        message: error,
        code: options.code ?? text.code,
        ...(reSent ? {} : { final: true }),
      };
      run.failLimit(error, options);
      return 'stop';
    }
    const calls = step.toolCalls ?? [];
    if (calls.length === 0) return 'next';
    const specs = calls.map((call, index): FakeToolCallSpec => ({
      // Numbered so results sort back into call order (clients answer in completion order).
      callId: `call_e2e_${ids.turn}_${ids.step}_${index + 1}`,
      ...('shell' in call
        ? { toolName: shell.name, args: shell.input(resolveModelText(call.shell, context())) }
        : {
            toolName: call.tool,
            args: typeof call.input === 'function' ? call.input(context()) : call.input,
          }),
    }));
    const results = await run.toolCalls(specs);
    record.toolResults.push(...results.map((result) => toReceived(result, run.request.index)));
    return 'next';
  };

  const play: Scenario = async (run) => {
    const main = run.toolNames.includes(shell.name);
    const record: PlayedRun = {
      request: run.request,
      main,
      replay: false,
      toolResults: [],
      webSearches: [],
      outcome: 'open',
    };
    played.push(record);
    run.signal.addEventListener(
      'abort',
      () => {
        if (record.outcome === 'open') record.outcome = 'closed-by-client';
      },
      { once: true },
    );
    const searchCall = scenario.searchSideCall;
    if (!main && searchCall !== undefined && isSearchSideCall(run.prompt)) {
      record.searchSideCall = true;
      for (const search of searchCall.searches) record.webSearches.push(await run.webSearch(search));
      run.text(
        resolveModelText(searchCall.answer, { workspaceDir: '', prompt: run.prompt, toolResults: [] }),
      );
      run.turnEnded({ inputTokens: 60, outputTokens: 20 });
      record.outcome = 'answered';
      return;
    }
    if (!main) {
      run.text(scenario.sideReply ?? 'E2E side answer');
      run.turnEnded({ inputTokens: 40, outputTokens: 5 });
      record.outcome = 'answered';
      return;
    }
    const { turn, replay } = turnFor(run.request);
    record.turn = turn;
    record.replay = replay;
    const steps = scenario.turns[turn - 1]?.steps;
    if (steps === undefined) {
      record.outcome = 'scenario-error';
      record.error = `the scenario has ${scenario.turns.length} turn(s); run ${run.request.index} asked for turn ${turn}`;
      // Thrown: the fake fails the stream with a code the SDK does not retry.
      throw new Error(`e2e model: ${record.error}`);
    }
    const attempt = played.filter((other) => other.main && other.turn === turn).length;
    for (const [index, step] of steps.entries()) {
      if ((await playStep(run, record, step, { turn, step: index + 1, attempt })) === 'stop') return;
    }
    run.turnEnded(usage);
    if (record.outcome === 'open') record.outcome = 'answered';
  };

  return { scenario: play, played };
};
