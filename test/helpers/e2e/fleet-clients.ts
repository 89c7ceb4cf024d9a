/**
 * The clients of a fleet's working day (see `fleet-model.ts` for the model they talk to): conversations in
 * the request shapes of Claude Code (Anthropic Messages, `x-claude-code-session-id`, `metadata.user_id`,
 * `Bash`), Codex (Responses, `session-id`, `store: false` with the whole history, `shell`, output in
 * Codex's header block) and OpenCode (Chat Completions, `x-session-id` / `x-session-affinity`, `bash`,
 * `role: "tool"` results), each driven by the official SDK of its protocol, streaming.
 *
 * Each client executes every tool call it receives and counts executions per step, and retries the way
 * its real client does, and only that way:
 * - an HTTP error before the answer starts (a draining process's 503 with `retry-after`, a refused
 *   connection): the SDK's own retries (Claude Code, Codex and the AI SDK behind OpenCode all retry
 *   them);
 * - a stream that breaks before its terminal event (a process killed mid-answer): the same request
 *   again, streaming, after the client's own pause (seen with the real clients against a killed process:
 *   Claude Code about 0.5 s, Codex about 0.2 s, OpenCode about 2 s).
 * Every retry is recorded with what caused it, and every request's latency, for the test and the bench.
 */

import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { expectedAnswer, stepResult, turnMessage } from './fleet-model.js';
import { errorMessage } from '../../../lib/error-message.js';
import { sleep } from '../../../lib/sleep.js';

export type FleetShape = 'claude-code' | 'codex' | 'opencode';

/** What one conversation does: its turns, steps per turn, and which steps and answers are slow. */
export type FleetPlan = {
  conversation: string;
  shape: FleetShape;
  turns: number;
  steps: number;
  /** `turn/step` keys of the steps whose tool takes {@link FleetOptions.slowToolMs}. */
  slowSteps: ReadonlySet<string>;
  /** Turns whose answer the model sends in two halves with a pause between. */
  slowAnswers: ReadonlySet<number>;
  /** The pause between a turn's answer and the next user message. */
  thinkMs: number;
};

const shapes: readonly FleetShape[] = ['claude-code', 'codex', 'opencode'];

/**
 * Conversation `fleet-<n>`: the shape rotates with `n`; turn 1's second step is slow in every conversation
 * (a call parked on a slow tool), turn 3's in every third; every fourth conversation answers its second
 * turn slowly; the pause between turns varies from 0.2 to 1.4 s (a person reading the answer).
 */
export const fleetPlan = (n: number, turns = 3, steps = 2): FleetPlan => ({
  conversation: `fleet-${n}`,
  shape: shapes[n % shapes.length] ?? 'claude-code',
  turns,
  steps,
  slowSteps: new Set(['1/2', ...(n % 3 === 0 ? ['3/2'] : [])]),
  slowAnswers: new Set(n % 4 === 0 ? [2] : []),
  thinkMs: 200 + (n % 5) * 300,
});

/** One HTTP request of a conversation (a user turn or a tool-result turn), retries included. */
export type FleetRequest = {
  conversation: string;
  shape: FleetShape;
  /** `performance.now()` when it was first sent and when its answer was whole. */
  startedAt: number;
  endedAt: number;
  /** Attempts after the first (a broken stream sent again). */
  resent: number;
  /** The turn's answer comes slowly on purpose (its latency includes the model's pause). */
  slowAnswer: boolean;
};

/** Something that made a client try again. */
export type FleetRetry = {
  conversation: string;
  shape: FleetShape;
  at: number;
  /** `http <status>` (retried by the SDK), `connection` (retried by the SDK) or `stream: <error>`. */
  cause: string;
};

export type FleetRecorder = {
  requests: FleetRequest[];
  retries: FleetRetry[];
  /** Conversations whose client is running a slow tool right now. */
  inSlowTool: Set<string>;
  /** Conversations whose client is reading a slow answer right now. */
  inSlowAnswer: Set<string>;
  /** Conversations started and not yet ended. */
  live: Set<string>;
};

export const createFleetRecorder = (): FleetRecorder => ({
  requests: [],
  retries: [],
  inSlowTool: new Set(),
  inSlowAnswer: new Set(),
  live: new Set(),
});

export type FleetOptions = {
  baseUrl: string;
  recorder: FleetRecorder;
  /** How long a slow tool runs (default 2.5 s); other tools take a few ms. */
  slowToolMs?: number;
};

/** What the client saw of one conversation. */
export type FleetOutcome = {
  plan: FleetPlan;
  /** Each turn's final answer text. */
  answers: string[];
  /** Executions per `turn/step`. */
  executions: Map<string, number>;
};

/** The answers a conversation must end with. */
export const expectedAnswers = (plan: FleetPlan): string[] =>
  Array.from({ length: plan.turns }, (_, index) => expectedAnswer(plan.conversation, index + 1, plan.steps));

type ToolCall = { id: string; command: string };
type Answer = { text: string; calls: ToolCall[] };

/** One client protocol: its transcript, one request, and how results go back. */
type ShapeClient = {
  /** How long the real client waits before it sends a request whose stream broke again. */
  retryPauseMs: number;
  addUser(text: string): void;
  /** Sends the transcript, streaming. */
  send(): Promise<Answer>;
  addResults(results: ReadonlyArray<{ call: ToolCall; output: string }>): void;
};

/** A `fetch` for the SDKs that records what their own retries answer. */
const recordingFetch =
  (note: (cause: string) => void): typeof fetch =>
  async (input, init) => {
    try {
      const response = await fetch(input, init);
      if (response.status >= 400) note(`http ${response.status}`);
      return response;
    } catch (error) {
      note('connection');
      throw error;
    }
  };

const shellSchema = {
  type: 'object' as const,
  properties: { command: { type: 'string' } },
  required: ['command'],
};

const anthropicClient = (
  baseUrl: string,
  conversation: string,
  note: (cause: string) => void,
): ShapeClient => {
  const sessionId = randomUUID();
  const client = new Anthropic({
    baseURL: baseUrl,
    apiKey: 'sk-fleet',
    maxRetries: 4,
    timeout: 180_000,
    defaultHeaders: { 'x-claude-code-session-id': sessionId },
    fetch: recordingFetch(note),
  });
  const messages: Anthropic.MessageParam[] = [];
  const metadata = {
    user_id: JSON.stringify({ device_id: 'fleet', account_uuid: '', session_id: sessionId }),
  };
  const tools = [{ name: 'Bash', description: 'Run a shell command', input_schema: shellSchema }];
  const answer = (message: Anthropic.Message): Answer => {
    messages.push({ role: 'assistant', content: message.content });
    return {
      text: message.content.flatMap((block) => (block.type === 'text' ? [block.text] : [])).join(''),
      calls: message.content.flatMap((block) =>
        block.type === 'tool_use'
          ? [{ id: block.id, command: String((block.input as { command?: unknown }).command) }]
          : [],
      ),
    };
  };
  const body = { model: 'composer-2', max_tokens: 1024, tools, metadata };
  return {
    retryPauseMs: 500,
    addUser: (text) => messages.push({ role: 'user', content: text }),
    send: async () => answer(await client.messages.stream({ ...body, messages }).finalMessage()),
    addResults: (results) =>
      messages.push({
        role: 'user',
        content: results.map(({ call, output }) => ({
          type: 'tool_result',
          tool_use_id: call.id,
          content: output,
        })),
      }),
  };
};

const codexClient = (baseUrl: string, conversation: string, note: (cause: string) => void): ShapeClient => {
  const sessionId = randomUUID();
  const client = new OpenAI({
    baseURL: `${baseUrl}/v1`,
    apiKey: 'sk-fleet',
    maxRetries: 4,
    timeout: 180_000,
    defaultHeaders: { 'session-id': sessionId, 'thread-id': sessionId },
    fetch: recordingFetch(note),
  });
  const input: OpenAI.Responses.ResponseInputItem[] = [];
  const tools: OpenAI.Responses.Tool[] = [
    {
      type: 'function',
      name: 'shell',
      description: 'Run a shell command',
      parameters: shellSchema,
      strict: false,
    },
  ];
  return {
    retryPauseMs: 200,
    addUser: (text) => input.push({ type: 'message', role: 'user', content: [{ type: 'input_text', text }] }),
    send: async () => {
      const stream = await client.responses.create({
        model: 'composer-2',
        input,
        tools,
        stream: true,
        store: false,
        prompt_cache_key: sessionId,
      });
      let completed: OpenAI.Responses.Response | undefined;
      for await (const event of stream) {
        if (event.type === 'response.completed') completed = event.response;
        if (event.type === 'response.failed' || event.type === 'error') {
          throw new Error(`${conversation}: ${event.type} ${JSON.stringify(event)}`);
        }
      }
      if (completed === undefined)
        throw new Error(`${conversation}: the stream ended without response.completed`);
      const calls: ToolCall[] = [];
      let text = '';
      for (const item of completed.output) {
        if (item.type === 'function_call') {
          calls.push({
            id: item.call_id,
            command: String((JSON.parse(item.arguments) as { command?: unknown }).command),
          });
          input.push({
            type: 'function_call',
            call_id: item.call_id,
            name: item.name,
            arguments: item.arguments,
          });
        } else if (item.type === 'message') {
          const said = item.content
            .flatMap((part) => (part.type === 'output_text' ? [part.text] : []))
            .join('');
          text += said;
          input.push({ type: 'message', role: 'assistant', content: said });
        }
      }
      return { text, calls };
    },
    addResults: (results) => {
      for (const { call, output } of results) {
        input.push({
          type: 'function_call_output',
          call_id: call.id,
          output: `Chunk ID: ${call.id.slice(-6)}\nWall time: 0.0100 seconds\nProcess exited with code 0\nOutput:\n${output}`,
        });
      }
    },
  };
};

const openCodeClient = (
  baseUrl: string,
  conversation: string,
  note: (cause: string) => void,
): ShapeClient => {
  const sessionId = `ses_${randomUUID().replaceAll('-', '').slice(0, 26)}`;
  const client = new OpenAI({
    baseURL: `${baseUrl}/v1`,
    apiKey: 'sk-fleet',
    maxRetries: 2,
    timeout: 180_000,
    defaultHeaders: { 'x-session-id': sessionId, 'x-session-affinity': sessionId },
    fetch: recordingFetch(note),
  });
  const messages: OpenAI.Chat.ChatCompletionMessageParam[] = [];
  const tools: OpenAI.Chat.ChatCompletionTool[] = [
    {
      type: 'function',
      function: { name: 'bash', description: 'Run a shell command', parameters: shellSchema },
    },
  ];
  return {
    retryPauseMs: 2_000,
    addUser: (text) => messages.push({ role: 'user', content: text }),
    send: async () => {
      const stream = await client.chat.completions.create({
        model: 'composer-2',
        messages,
        tools,
        stream: true,
        stream_options: { include_usage: true },
      });
      let text = '';
      let finished = false;
      const calls: Array<{ id: string; name: string; arguments: string }> = [];
      for await (const chunk of stream) {
        const choice = chunk.choices[0];
        if (choice === undefined) continue;
        text += choice.delta.content ?? '';
        for (const call of choice.delta.tool_calls ?? []) {
          const entry = (calls[call.index] ??= { id: '', name: '', arguments: '' });
          entry.id ||= call.id ?? '';
          entry.name ||= call.function?.name ?? '';
          entry.arguments += call.function?.arguments ?? '';
        }
        if (choice.finish_reason !== null && choice.finish_reason !== undefined) finished = true;
      }
      if (!finished) throw new Error(`${conversation}: the stream ended without a finish_reason`);
      messages.push({
        role: 'assistant',
        content: text,
        ...(calls.length === 0
          ? {}
          : {
              tool_calls: calls.map((call) => ({
                id: call.id,
                type: 'function' as const,
                function: { name: call.name, arguments: call.arguments },
              })),
            }),
      });
      return {
        text,
        calls: calls.map((call) => ({
          id: call.id,
          command: String((JSON.parse(call.arguments) as { command?: unknown }).command),
        })),
      };
    },
    addResults: (results) => {
      for (const { call, output } of results)
        messages.push({ role: 'tool', tool_call_id: call.id, content: `${output}\n` });
    },
  };
};

const clientFor = { 'claude-code': anthropicClient, codex: codexClient, opencode: openCodeClient };

/** Attempts at one request whose stream keeps breaking, before the conversation fails. */
const maxAttempts = 5;

/**
 * Run one conversation as its client would: each user turn until the model stops calling tools, executing
 * every call once, then the next user turn after the plan's pause.
 */
export const runFleetConversation = async (plan: FleetPlan, options: FleetOptions): Promise<FleetOutcome> => {
  const { recorder } = options;
  const { conversation, shape } = plan;
  const note = (cause: string): void => {
    recorder.retries.push({ conversation, shape, at: performance.now(), cause });
  };
  const client = clientFor[shape](options.baseUrl, conversation, note);
  const executions = new Map<string, number>();
  const answers: string[] = [];

  const request = async (slowAnswer: boolean): Promise<Answer> => {
    const startedAt = performance.now();
    for (let attempt = 0; ; attempt += 1) {
      if (slowAnswer) recorder.inSlowAnswer.add(conversation);
      try {
        const answer = await client.send();
        recorder.requests.push({
          conversation,
          shape,
          startedAt,
          endedAt: performance.now(),
          resent: attempt,
          slowAnswer: slowAnswer && answer.calls.length === 0,
        });
        return answer;
      } catch (error) {
        if (attempt + 1 >= maxAttempts) throw error;
        note(`stream: ${errorMessage(error).slice(0, 160)}`);
        await sleep(client.retryPauseMs);
      } finally {
        recorder.inSlowAnswer.delete(conversation);
      }
    }
  };

  const execute = async (call: ToolCall): Promise<string> => {
    const match = /^run-step (fleet-\d+) (\d+) (\d+)$/.exec(call.command);
    if (match?.[1] !== conversation) throw new Error(`${conversation}: unexpected command ${call.command}`);
    const [turn, step] = [Number(match[2]), Number(match[3])];
    const key = `${turn}/${step}`;
    executions.set(key, (executions.get(key) ?? 0) + 1);
    if (plan.slowSteps.has(key)) {
      recorder.inSlowTool.add(conversation);
      await sleep(options.slowToolMs ?? 2_500);
      recorder.inSlowTool.delete(conversation);
    } else {
      await sleep(5);
    }
    return stepResult(conversation, turn, step);
  };

  const runTurn = async (turn: number): Promise<void> => {
    const slowAnswer = plan.slowAnswers.has(turn);
    client.addUser(turnMessage(conversation, turn, plan.steps, slowAnswer));
    let answer = await request(false);
    for (let rounds = 0; answer.calls.length > 0; rounds += 1) {
      if (rounds > plan.steps * 2) throw new Error(`${conversation}: more tool rounds than the model plays`);
      const results = [];
      for (const call of answer.calls) results.push({ call, output: await execute(call) });
      client.addResults(results);
      answer = await request(slowAnswer);
    }
    answers.push(answer.text);
    if (turn < plan.turns) await sleep(plan.thinkMs);
  };

  recorder.live.add(conversation);
  try {
    for (let turn = 1; turn <= plan.turns; turn += 1) await runTurn(turn);
  } finally {
    recorder.live.delete(conversation);
  }
  return { plan, answers, executions };
};

/** p50 and p99 of `values` (ms), nearest rank. */
export const percentiles = (values: readonly number[]): { p50: number; p99: number; count: number } => {
  const sorted = [...values].sort((a, b) => a - b);
  const rank = (p: number): number =>
    sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)] ?? Number.NaN;
  return { p50: rank(50), p99: rank(99), count: sorted.length };
};
