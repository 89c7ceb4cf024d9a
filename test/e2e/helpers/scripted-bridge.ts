/**
 * An in-process bridge for the real clients: the production server, engine, protocol adapters,
 * workspace service (real AGENTS.md and prompt grounding) and scratch-path guard, with the
 * {@link ScriptedUpstream} playing the model. It listens on a unix socket (see `network-isolation.ts`)
 * and records every HTTP request, what each adapter parsed and the exact frames it sent back, plus its
 * own log, for assertions and for failure reports.
 */

import { AsyncLocalStorage } from 'node:async_hooks';
import { mkdtemp, readFile, realpath, rm } from 'node:fs/promises';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Engine } from '../../../src/engine/engine.js';
import { createLogger } from '../../../src/logging/logger.js';
import { anthropicAdapter } from '../../../src/protocols/anthropic/anthropic-adapter.js';
import { openaiChatAdapter } from '../../../src/protocols/openai-chat/openai-chat-adapter.js';
import { openaiResponsesAdapter } from '../../../src/protocols/openai-responses/openai-responses-adapter.js';
import type { ProtocolAdapter } from '../../../src/protocols/protocol-adapter.js';
import type { SseFrame } from '../../../src/protocols/sse-frame.js';
import { createBridgeServer } from '../../../src/server/create-server.js';
import { serializeSseFrames } from '../../../src/server/sse-serialize.js';
import type { TurnProtocol, TurnRequest } from '../../../src/turn/turn-request.js';
import { ScriptedUpstream, type ScriptedCall } from '../../../src/upstream/scripted/scripted-upstream.js';
import { PromptGrounding } from '../../../src/workspace/prompt-grounding.js';
import { ScratchPathGuards } from '../../../src/workspace/scratch-path-guards.js';
import { TemplateStore } from '../../../src/workspace/template-store.js';
import { WorkspaceManager } from '../../../src/workspace/workspace-manager.js';
import { resolveDefaultTemplateDir } from '../../../src/workspace/workspace-paths.js';
import { WorkspaceService } from '../../../src/workspace/workspace-service.js';
import type { BackendRun, E2eBridge, RecordedExchange } from './e2e-bridge.js';
import type { ModelScenario } from './model-scenario.js';
import { createScriptedModel, type ShellTool } from './scripted-model.js';

/** The in-process bridge; `upstream` and `engine` are exposed for diagnosis. */
export type ScriptedBridge = E2eBridge & {
  upstream: ScriptedUpstream;
  engine: Engine;
  /** The bridge's pino log, one JSON line per entry. */
  logLines: string[];
};

type Recorder = { current: (protocol: TurnProtocol) => RecordedExchange };

/** Wraps an adapter so each request's body, parse result and output are recorded. */
const recordingAdapter = (adapter: ProtocolAdapter, recorder: Recorder): ProtocolAdapter => {
  const exchangeFor = new WeakMap<TurnRequest, RecordedExchange>();
  return {
    protocol: adapter.protocol,
    idPrefix: adapter.idPrefix,
    parseRequest: (body, headers) => {
      const exchange = recorder.current(adapter.protocol);
      exchange.body = body;
      const result = adapter.parseRequest(body, headers);
      exchange.parsed = result.success
        ? { ok: true, turn: result.value }
        : { ok: false, error: result.error };
      if (result.success) exchangeFor.set(result.value, exchange);
      return result;
    },
    createStreamEncoder: (request, meta) => {
      const encoder = adapter.createStreamEncoder(request, meta);
      const exchange = exchangeFor.get(request);
      const frames = exchange?.frames ?? [];
      const record = (out: SseFrame[]): SseFrame[] => {
        frames.push(...out);
        return out;
      };
      return {
        start: () => record(encoder.start()),
        push: (event) => record(encoder.push(event)),
        end: () => record(encoder.end()),
        keepalive: () => {
          const frame = encoder.keepalive();
          frames.push(frame);
          if (exchange !== undefined) exchange.keepalives += 1;
          return frame;
        },
        get ended() {
          return encoder.ended;
        },
      };
    },
    createJsonResponse: (request, meta, events) => {
      const json = adapter.createJsonResponse(request, meta, events);
      const exchange = exchangeFor.get(request);
      if (exchange !== undefined) exchange.json = json;
      return json;
    },
    createErrorResponse: (error) => {
      const answer = adapter.createErrorResponse(error);
      const exchange = recorder.current(adapter.protocol);
      exchange.json = answer.body;
      return answer;
    },
  };
};

export type StartScriptedBridgeOptions = {
  scenario: ModelScenario;
  shell: ShellTool;
};

const listen = (server: Server, socketPath: string): Promise<void> =>
  new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(socketPath, () => resolve());
  });

const truncate = (text: string, max = 4_000): string =>
  text.length > max ? `${text.slice(0, max)}… [${text.length - max} more chars]` : text;

const toolName = (tool: unknown): string => {
  const record = (tool ?? {}) as { name?: unknown; function?: { name?: unknown }; type?: unknown };
  return String(record.name ?? record.function?.name ?? record.type);
};

/**
 * A request body for a failure report: the transcript's tail in full (where a turn's evidence is), the
 * head and the tool list only summarised (they are tens of KB of client prompt).
 */
const summarizeBody = (body: unknown): string => {
  if (typeof body !== 'object' || body === null) return truncate(JSON.stringify(body));
  const summary: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(body)) {
    if ((key === 'messages' || key === 'input') && Array.isArray(value)) {
      summary[key] = `[${value.length} items; the last ones below]`;
    } else if (key === 'tools' && Array.isArray(value)) {
      summary[key] = value.map(toolName);
    } else if (key === 'system') {
      summary[key] = `[${JSON.stringify(value).length} chars]`;
    } else {
      summary[key] = value;
    }
  }
  const transcript =
    (body as { messages?: unknown; input?: unknown }).messages ?? (body as { input?: unknown }).input;
  const tail = Array.isArray(transcript)
    ? transcript.slice(-4).map((item) => `\n    ${truncate(JSON.stringify(item), 1_500)}`)
    : [];
  return `${truncate(JSON.stringify(summary), 2_000)}${tail.join('')}`;
};

/** Start a bridge whose model plays `scenario`. */
export const startScriptedBridge = async (options: StartScriptedBridgeOptions): Promise<ScriptedBridge> => {
  const root = await realpath(await mkdtemp(join(tmpdir(), 'cb-e2e-bridge-')));
  const socketPath = join(root, 'bridge.sock');
  const shellName = options.shell.name;
  const toRun = (call: ScriptedCall): BackendRun => ({
    agentId: call.sessionId,
    model: call.input.model,
    prompt: call.input.prompt.text,
    toolNames: call.input.tools.map((tool) => tool.name),
    main: call.input.tools.some((tool) => tool.name === shellName),
    toolResults: call.toolResults.map((result) => ({
      toolCallId: result.toolCallId,
      text: result.content.map((part) => (part.type === 'text' ? part.text : '[image]')).join('\n'),
      isError: result.isError,
    })),
    workspaceDir: call.sessionOptions.workspaceDir,
  });
  const logLines: string[] = [];
  const logger = createLogger({
    level: 'debug',
    destination: { write: (line: string) => logLines.push(line) },
  });

  // The model reads the upstream's call log (for the run's workspace), so it gets the instance lazily.
  const created: ScriptedUpstream = new ScriptedUpstream(
    createScriptedModel(options.scenario, options.shell, () => created),
  );
  created.preflightError = options.scenario.refuse;

  const templates = await TemplateStore.load({ defaultDir: resolveDefaultTemplateDir(), logger });
  const workspaceRoot = join(root, 'workspaces');
  const workspaces = new WorkspaceManager({ root: workspaceRoot, templates, logger });
  const guards = new ScratchPathGuards({ logger, scratchRoot: workspaceRoot });
  const engine = new Engine({
    upstream: created,
    workspace: new WorkspaceService(workspaces, new PromptGrounding(templates)),
    guard: {
      check: (sessionKey, call, context) => {
        const check = guards.check(sessionKey, call, context);
        return check.forward ? { forward: true } : { forward: false, correction: check.correction };
      },
      endTurn: (sessionKey) => guards.endTurn(sessionKey),
      forget: (sessionKey) => guards.forget(sessionKey),
    },
    logger,
    mode: 'bridge',
    resolveModel: (request) => ({ model: request.model }),
  });

  const exchanges: RecordedExchange[] = [];
  const context = new AsyncLocalStorage<RecordedExchange>();
  const recorder: Recorder = {
    current: (protocol) => {
      const exchange = context.getStore();
      if (exchange === undefined) throw new Error('e2e: adapter called outside a request');
      exchange.protocol = protocol;
      return exchange;
    },
  };
  const server = createBridgeServer({
    adapters: {
      anthropic: recordingAdapter(anthropicAdapter, recorder),
      openaiChat: recordingAdapter(openaiChatAdapter, recorder),
      openaiResponses: recordingAdapter(openaiResponsesAdapter, recorder),
    },
    handleTurn: engine.handleTurn,
    logger,
    ...(options.scenario.keepaliveMs === undefined ? {} : { keepaliveMs: options.scenario.keepaliveMs }),
    listModels: () => ['composer-2'],
    metrics: () => engine.metrics(),
  });
  // Run the bridge's own handler inside an async context that names the exchange, so the recording
  // adapters attribute bodies and frames to the right request even when requests overlap.
  const handlers = server.listeners('request') as Array<
    (request: IncomingMessage, response: ServerResponse) => void
  >;
  server.removeAllListeners('request');
  server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    const exchange: RecordedExchange = {
      method: request.method ?? '',
      url: request.url ?? '',
      headers: { ...request.headers },
      frames: [],
      keepalives: 0,
    };
    exchanges.push(exchange);
    response.on('finish', () => (exchange.status = response.statusCode));
    context.run(exchange, () => {
      for (const handler of handlers) handler.call(server, request, response);
    });
  });
  await listen(server, socketPath);

  const describe = (): string => {
    const parts: string[] = [`--- bridge exchanges (${exchanges.length}) ---`];
    for (const [index, exchange] of exchanges.entries()) {
      parts.push(
        `#${index + 1} ${exchange.method} ${exchange.url} -> ${String(exchange.status ?? 'open')}`,
        `  headers: ${truncate(JSON.stringify(exchange.headers), 1_500)}`,
      );
      if (exchange.body !== undefined) parts.push(`  body: ${summarizeBody(exchange.body)}`);
      if (exchange.parsed?.ok === false)
        parts.push(`  parse error: ${JSON.stringify(exchange.parsed.error)}`);
      if (exchange.frames.length > 0) parts.push(`  sse:\n${truncate(serializeSseFrames(exchange.frames))}`);
      if (exchange.json !== undefined) parts.push(`  json: ${truncate(JSON.stringify(exchange.json))}`);
    }
    parts.push(`--- upstream runs (${created.calls.length}) ---`);
    for (const [index, call] of created.calls.entries()) {
      parts.push(
        `run ${index} session=${call.sessionId} model=${call.input.model} tools=[${call.input.tools.map((tool) => tool.name).join(', ')}] cancelled=${String(call.cancelled)}`,
        `  prompt: ${truncate(call.input.prompt.text, 6_000)}`,
        `  tool results: ${truncate(JSON.stringify(call.toolResults))}`,
      );
    }
    parts.push(`--- bridge log (${logLines.length} lines) ---`, truncate(logLines.join(''), 20_000));
    return parts.join('\n');
  };

  return {
    socketPath,
    upstream: created,
    engine,
    exchanges,
    logLines,
    turnExchanges: () => exchanges.filter((exchange) => exchange.protocol !== undefined),
    mainExchanges: () =>
      exchanges.filter(
        (exchange) =>
          exchange.parsed?.ok === true && exchange.parsed.turn.tools.some((tool) => tool.name === shellName),
      ),
    runs: () => created.calls.map(toRun),
    mainRuns: () => created.calls.map(toRun).filter((run) => run.main),
    metrics: async () => engine.metrics(),
    readWorkspaceFile: (run, relativePath) => readFile(join(run.workspaceDir, relativePath), 'utf8'),
    describe,
    close: async () => {
      try {
        await new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeAllConnections();
        });
      } finally {
        try {
          await engine.close();
        } finally {
          await workspaces.close();
          await rm(root, { recursive: true, force: true });
        }
      }
    },
  };
};
