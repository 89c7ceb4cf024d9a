/**
 * A search side call: a request whose only job is a hosted web search (it offers the search and no tool
 * of its own, as Claude Code's WebSearch tool sends it: one user message, `tool_choice` naming the
 * search). It runs on a one-off Cursor agent allowed nothing but Cursor's web search, outside the
 * conversation registry, so it never joins, supersedes or evicts the conversation it was made for.
 *
 * The answer reports the searches first, then the text, as a search-first answer reads: the text is held
 * until the run ends (a search answer is short; the stream keeps alive meanwhile). The text is passed on
 * only when a search found something: when the model answered without searching the answer is a failed
 * search, and when every search failed the failures are all there is — an answer from memory must never
 * reach the client dressed as search results.
 */

import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import type { TurnEvent, TurnWebSearchCall } from '../turn/turn-event.js';
import type { TurnRequest, TurnWebSearch } from '../turn/turn-request.js';
import type { TurnUsage } from '../turn/turn-usage.js';
import type { UpstreamPort, UpstreamSession } from '../upstream/upstream-port.js';
import type { WorkspacePort } from './engine-deps.js';
import { EventPump } from './event-pump.js';
import { buildFullPrompt } from './prompt-builder.js';
import { webSearchCallGrounding } from './web-search-prompt.js';

export type WebSearchCallDeps = {
  upstream: UpstreamPort;
  workspace: WorkspacePort;
  logger: Logger;
  /** Told when the side call's run finished, with its agent (for billing) and the usage it reported. */
  onFinished?: (agent: UpstreamSession, usage: TurnUsage) => void;
};

/**
 * A request the engine answers as a search side call: an Anthropic Messages request whose only tool is the
 * hosted search — Claude Code's WebSearch request (it names the search in `tool_choice`, but demotes that
 * to `auto` behind a proxy, so the choice cannot tell). A Chat or Responses request with web search on and
 * no tools is a conversation whose agent may search.
 */
export const isWebSearchCall = (
  request: TurnRequest,
): request is TurnRequest & { webSearch: TurnWebSearch } =>
  request.webSearch !== undefined && request.tools.length === 0 && request.protocol === 'anthropic';

/** Claude Code's WebSearch prompt: `Perform a web search for the query: <query>`. */
const queryPattern = /^Perform a web search for the query:\s*([\s\S]+?)\s*$/;

/** The query the client asked for, for a search the model never made: Claude Code's phrase, else the last user text. */
export const requestedQuery = (request: TurnRequest): string => {
  const last = request.messages.findLast((message) => message.role === 'user');
  const text = (last?.content ?? [])
    .flatMap((part) => (part.type === 'text' ? [part.text] : []))
    .join('\n')
    .trim();
  return (queryPattern.exec(text)?.[1] ?? text).slice(0, 500);
};

/** An id for a search the model never made. */
const searchId = (): string => randomBytes(8).toString('hex');

/**
 * The side call's events: reasoning as it comes, each search as soon as it is known, the held text at
 * the end; exactly one terminal event. Aborting `signal` cancels the run. The agent and its directory are
 * released when the generator ends, however it ends.
 */
export async function* runWebSearchCall(
  deps: WebSearchCallDeps,
  request: TurnRequest & { webSearch: TurnWebSearch },
  model: string,
  signal: AbortSignal,
): AsyncGenerator<TurnEvent, void> {
  const scratch = await deps.workspace.scratch();
  try {
    const session = await deps.upstream.createSession({
      workspaceDir: scratch.workspaceDir,
      webTools: { fetch: false, only: true },
    });
    try {
      const run = await session.startRun({
        prompt: buildFullPrompt(request, webSearchCallGrounding(request.webSearch)),
        tools: [],
        model,
        reasoning: request.reasoning,
      });
      const cancel = (): void => void run.cancel();
      signal.addEventListener('abort', cancel, { once: true });
      const pump = new EventPump({ tools: [], webSearch: request.webSearch });
      try {
        if (signal.aborted) cancel();
        yield* reorder(pump.pump(run.events), request);
      } finally {
        signal.removeEventListener('abort', cancel);
        // Here, not after the events: the consumer may stop reading at the terminal event.
        if (pump.outcome.kind === 'finished' && pump.reported !== undefined)
          deps.onFinished?.(session, pump.reported.usage);
      }
    } finally {
      await session.dispose();
    }
  } finally {
    await scratch.release().catch((error: unknown) => {
      deps.logger.warn({ err: error }, "a web search call's scratch workspace could not be removed");
    });
  }
}

/**
 * The most answer text a side call holds (UTF-16 units): a search's summary is short; text past the bound
 * is dropped, so a runaway answer cannot grow the bridge's memory.
 */
export const maxHeldTextChars = 1 << 20;

/** Searches first, held text last; a forced search that never ran becomes a failed one. */
async function* reorder(
  events: AsyncIterable<TurnEvent>,
  request: TurnRequest,
): AsyncGenerator<TurnEvent, void> {
  const held: TurnEvent[] = [];
  let heldChars = 0;
  let searched = false;
  let found = false;
  for await (const event of events) {
    switch (event.type) {
      case 'text-start':
      case 'text-end':
        held.push(event);
        break;
      case 'text-delta': {
        const room = maxHeldTextChars - heldChars;
        if (room <= 0) break;
        const delta = event.delta.length <= room ? event : { ...event, delta: event.delta.slice(0, room) };
        heldChars += delta.delta.length;
        held.push(delta);
        break;
      }
      case 'web-search':
        searched = true;
        if (event.outcome.status === 'completed') found = true;
        yield event;
        break;
      case 'turn-end':
        if (found) yield* held;
        else if (!searched) {
          const notPerformed: TurnWebSearchCall = {
            type: 'web-search',
            id: `search-${searchId()}`,
            action: { kind: 'search', query: requestedQuery(request) },
            outcome: {
              status: 'failed',
              code: 'not-performed',
              message: "Cursor's model answered without searching the web; its answer was discarded.",
            },
          };
          yield notPerformed;
        }
        yield event;
        return;
      default:
        yield event;
        if (event.type === 'error') return;
    }
  }
}
