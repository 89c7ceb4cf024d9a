import { pino } from 'pino';
import { Engine, type EngineOptions } from '../../src/engine/engine.js';
import { createStaticWorkspace } from '../../src/engine/engine-deps.js';
import type { TurnEvent } from '../../src/turn/turn-event.js';
import type { TurnMessage, TurnRequest } from '../../src/turn/turn-request.js';
import { ScriptedUpstream, type ScriptSource } from '../../src/upstream/scripted/scripted-upstream.js';

export { sleep } from '../../lib/sleep.js';

export const silentLogger = pino({ level: 'silent' });

export const createTestEngine = (source: ScriptSource, options: Partial<EngineOptions> = {}) => {
  const upstream = new ScriptedUpstream(source);
  const engine = new Engine({
    upstream,
    workspace: createStaticWorkspace('/tmp/scratch', { head: 'HEAD', tail: 'TAIL' }),
    logger: silentLogger,
    resolveModel: (request) => ({ model: request.model, route: 'explicit' }),
    ...options,
  });
  return { engine, upstream };
};

export const user = (text: string): TurnMessage => ({ role: 'user', content: [{ type: 'text', text }] });
export const assistant = (
  text: string,
  calls: Array<{ id: string; name: string; input?: unknown }> = [],
): TurnMessage => ({
  role: 'assistant',
  content: [
    ...(text === '' ? [] : [{ type: 'text' as const, text }]),
    ...calls.map((call) => ({
      type: 'tool-call' as const,
      toolCallId: call.id,
      toolName: call.name,
      input: call.input ?? {},
    })),
  ],
});
export const toolResult = (id: string, text: string, isError = false): TurnMessage => ({
  role: 'tool',
  toolCallId: id,
  content: [{ type: 'text', text }],
  isError,
});

export const request = (messages: TurnMessage[], extra: Partial<TurnRequest> = {}): TurnRequest => ({
  protocol: 'anthropic',
  model: 'composer-2',
  system: [{ type: 'text', text: 'You are Claude Code.' }],
  messages,
  tools: [{ kind: 'function', name: 'Bash', description: 'Run a command', inputSchema: { type: 'object' } }],
  toolChoice: { type: 'auto' },
  reasoning: { requested: false },
  stream: true,
  includeStreamUsage: true,
  identity: { nativeSessionId: { value: 'session-1', source: 'x-claude-code-session-id' } },
  headers: {},
  warnings: [],
  ...extra,
});

export const collect = async (events: AsyncIterable<TurnEvent>, limit = Infinity): Promise<TurnEvent[]> => {
  const out: TurnEvent[] = [];
  for await (const event of events) {
    out.push(event);
    if (out.length >= limit) break;
  }
  return out;
};

export const textOf = (events: TurnEvent[]): string =>
  events.flatMap((event) => (event.type === 'text-delta' ? [event.delta] : [])).join('');

/** A signal that never aborts. */
export const never: AbortSignal = new AbortController().signal;

/** Request fields giving it a client session id (the `x-session-id` header). */
export const withId = (id: string) => ({
  identity: { nativeSessionId: { value: id, source: 'x-session-id' } },
});

/** Read a response until `stop(event)`, then leave as a disconnecting client does. */
export const readUntil = async (
  events: AsyncIterable<TurnEvent>,
  abort: AbortController,
  stop: (event: TurnEvent) => boolean,
): Promise<TurnEvent[]> => {
  const seen: TurnEvent[] = [];
  for await (const event of events) {
    seen.push(event);
    if (stop(event)) {
      abort.abort();
      break;
    }
  }
  return seen;
};
