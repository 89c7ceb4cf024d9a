/**
 * Many concurrent conversations through a load balancer, for the scale-out tests: a fake Cursor backend
 * scenario (one per bridge process) that plays every conversation by the marker in its prompt, and a
 * client (the official `@anthropic-ai/sdk`, streaming) that runs a conversation of two tool round trips
 * and a second turn, executing each tool call it receives and counting executions per call id.
 *
 * Conversation `conv-N`, turn 1: the model calls `Bash` with `echo conv-N-a`, then (after that result)
 * with `echo conv-N-b`, then answers `conv-N done: <results>`. Turn 2 ("Second turn for conv-N."):
 * `conv-N second`. Each process's backend records which runs of which conversation it played, on which
 * agent, and every tool result it received.
 */

import Anthropic from '@anthropic-ai/sdk';
import { randomUUID } from 'node:crypto';
import type { FakeToolResult, RunContext, Scenario } from '../../fakes/cursor-backend/index.js';

/** One run a process's backend played. */
export type ConversationRun = {
  conversation: string;
  turn: 1 | 2;
  /** The Cursor agent (the run request's `conversationId`). */
  agentId: string;
  /** Tool results the run received, as text, in call order. */
  toolResults: string[];
  outcome: 'open' | 'answered' | 'closed';
};

export type ConversationBackend = { scenario: Scenario; runs: ConversationRun[] };

const resultText = (result: FakeToolResult): string =>
  result.status === 'success'
    ? result.content.map((part) => (part.type === 'text' ? part.text : '[image]')).join('')
    : `${result.status}`;

/** The backend scenario for one bridge process. */
export const createConversationBackend = (): ConversationBackend => {
  const runs: ConversationRun[] = [];
  const scenario: Scenario = async (run: RunContext) => {
    const conversation = /conv-\d+/.exec(run.prompt)?.[0];
    if (conversation === undefined) throw new Error(`scale backend: no conversation marker in ${run.prompt}`);
    const second = run.prompt.includes(`Second turn for ${conversation}.`);
    const record: ConversationRun = {
      conversation,
      turn: second ? 2 : 1,
      agentId: run.request.conversationId,
      toolResults: [],
      outcome: 'open',
    };
    runs.push(record);
    run.signal.addEventListener('abort', () => {
      if (record.outcome === 'open') record.outcome = 'closed';
    });
    if (second) {
      run.text(`${conversation} second`);
    } else {
      for (const step of ['a', 'b']) {
        const [result] = await run.toolCalls([
          {
            toolName: 'Bash',
            callId: `call_${conversation}_${step}`,
            args: { command: `echo ${conversation}-${step}` },
          },
        ]);
        if (result !== undefined) record.toolResults.push(resultText(result));
      }
      run.text(`${conversation} done: ${record.toolResults.join(', ')}`);
    }
    run.turnEnded({ inputTokens: 10, outputTokens: 5 });
    record.outcome = 'answered';
  };
  return { scenario, runs };
};

const tools = [
  {
    name: 'Bash',
    description: 'Run a shell command',
    input_schema: { type: 'object' as const, properties: { command: { type: 'string' } } },
  },
];

type Message = Anthropic.MessageParam;

/** What the client saw of one conversation. */
export type ConversationOutcome = {
  conversation: string;
  sessionId: string;
  /** Tool executions per tool_use id (a duplicate execution shows as 2). */
  executions: Map<string, number>;
  firstAnswer: string;
  secondAnswer: string;
};

export type RunConversationOptions = {
  baseUrl: string;
  conversation: string;
  /** Called before the client runs a tool call and posts its result (e.g. to SIGTERM the process). */
  beforeToolResult?: (toolUseId: string) => Promise<void>;
  /** The SDK's own retries (it honours `retry-after`); default 0. */
  maxRetries?: number;
};

const textOf = (message: Anthropic.Message): string =>
  message.content.flatMap((block) => (block.type === 'text' ? [block.text] : [])).join('');

/**
 * Run one conversation as a tool-hosting client would: turn 1 until the model stops calling tools
 * (executing every call it receives, once), then a second user turn. Every request carries
 * `x-claude-code-session-id` (a fresh uuid) and `metadata.user_id`, as Claude Code does.
 */
export const runConversation = async (options: RunConversationOptions): Promise<ConversationOutcome> => {
  const sessionId = randomUUID();
  const client = new Anthropic({
    baseURL: options.baseUrl,
    apiKey: 'sk-scale-test',
    maxRetries: options.maxRetries ?? 0,
    timeout: 120_000,
    defaultHeaders: { 'x-claude-code-session-id': sessionId },
  });
  const executions = new Map<string, number>();
  const metadata = {
    user_id: JSON.stringify({ device_id: 'scale', account_uuid: '', session_id: sessionId }),
  };
  const send = (messages: Message[]): Promise<Anthropic.Message> =>
    client.messages
      .stream({ model: 'composer-2', max_tokens: 1024, tools, metadata, messages })
      .finalMessage();

  const messages: Message[] = [
    { role: 'user', content: `Conversation ${options.conversation}: run two checks.` },
  ];
  let answer = await send(messages);
  for (let rounds = 0; answer.stop_reason === 'tool_use'; rounds += 1) {
    if (rounds > 4) throw new Error(`${options.conversation}: more tool rounds than the model plays`);
    messages.push({ role: 'assistant', content: answer.content });
    const results: Anthropic.ToolResultBlockParam[] = [];
    for (const block of answer.content) {
      if (block.type !== 'tool_use') continue;
      await options.beforeToolResult?.(block.id);
      executions.set(block.id, (executions.get(block.id) ?? 0) + 1);
      const command = String((block.input as { command?: unknown }).command ?? '');
      results.push({ type: 'tool_result', tool_use_id: block.id, content: command.replace(/^echo /, '') });
    }
    messages.push({ role: 'user', content: results });
    answer = await send(messages);
  }
  const firstAnswer = textOf(answer);
  messages.push({ role: 'assistant', content: answer.content });
  messages.push({ role: 'user', content: `Second turn for ${options.conversation}.` });
  const secondAnswer = textOf(await send(messages));
  return { conversation: options.conversation, sessionId, executions, firstAnswer, secondAnswer };
};
