/**
 * A fake of Cursor's backend on 127.0.0.1 that the real, unmodified `@cursor/sdk` talks to through
 * `CURSOR_BACKEND_URL=http://127.0.0.1:<port>` (HTTP/1.1 Connect: `RunSSE` + `BidiAppend`).
 *
 * Routes: `POST /auth/exchange_user_api_key` (a JWT with `exp`), `GET /v1/models`, `GET
 * /v1/agents/{id}/usage` (the turns billed, see {@link FakeBilling}), `RunSSE`,
 * `BidiAppend`, `BootstrapStatsig` (JSON `{}`), and every other RPC an empty `200 application/proto`,
 * each after `delayMs` when set (a WAN round trip).
 * Each `AgentRunRequest` (first send and every SDK retry) is decoded, logged in `runRequests` and
 * played by the current {@link Scenario}.
 */

import { createServer } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

import type { ClientMessage, JsonObject } from './client-message.js';
import { decodeClientMessage } from './client-message.js';
import { decodeEnvelopes } from './connect-envelope.js';
import type { FakeModel } from './default-models.js';
import { DEFAULT_FAKE_MODELS } from './default-models.js';
import { FakeRun } from './fake-run.js';
import type { FakeStreamTrace } from './fake-stream.js';
import { FakeStream } from './fake-stream.js';
import { decodeReceivedImages, receivedImage, type FakeReceivedImage } from './received-images.js';
import type { FakeOfferedTool, FakeRunRequest, FakeUsage, RunContext, Scenario } from './run-context.js';
import type { ProtoRegistry } from './sdk-proto-registry.js';
import { loadSdkProtoRegistry } from './sdk-proto-registry.js';
import { errorMessage } from '../../../lib/error-message.js';
import { isRecord } from '../../../lib/is-record.js';
import { sleep } from '../../../lib/sleep.js';

/** Headers copied into {@link FakeRequestLogEntry.headers} when present. */
export const LOGGED_HEADERS = [
  'authorization',
  'content-type',
  'connect-protocol-version',
  'x-cursor-agent-allowed-tools',
  'x-cursor-agent-exclude-tools',
  'x-cursor-client-type',
  'x-cursor-client-version',
  'x-ghost-mode',
  'x-request-id',
] as const;

/** One HTTP request the fake received. */
export type FakeRequestLogEntry = {
  method: string;
  path: string;
  headers: Partial<Record<(typeof LOGGED_HEADERS)[number], string>>;
  /** For RunSSE / BidiAppend: the Bidi request id. */
  requestId?: string;
  /** For BidiAppend: the decoded client message kind (`run-request`, `exec-result`, …). */
  clientMessage?: string;
  at: number;
};

export type FakeAuthMode = 'ok' | 'reject';

/** A turn's cost in float cents, as `GET /v1/agents/{id}/usage` reports it. */
export type FakeCost = { rawCostCents: number; chargedCents: number };

/**
 * How the fake bills the usage each `turnEnded` reports, read back through `GET /v1/agents/{id}/usage`
 * (what the SDK's `agent.getUsage()` calls). Without `price`, turns carry no cost (a backend that does not
 * report cost yet); `costAfterReads` keeps a turn's cost out of that many reads that list the turn (cost is
 * eventually consistent on Cursor's side), counted in reads rather than time so that a test of the
 * bridge's re-reads does not depend on how fast the machine runs. The default: {@link fakePrice}, at once.
 */
export type FakeBilling = { price?: (usage: FakeUsage) => FakeCost; costAfterReads?: number };

/**
 * The fake's price list, in cents per token: 0.0003 input, 0.0015 output, 0.00003 cache read, 0.000375
 * cache write (3 / 15 / 0.3 / 3.75 dollars per million tokens); charged as raw.
 */
export const fakePrice = (usage: FakeUsage): FakeCost => {
  const raw =
    usage.inputTokens * 0.0003 +
    usage.outputTokens * 0.0015 +
    (usage.cacheReadTokens ?? 0) * 0.00003 +
    (usage.cacheWriteTokens ?? 0) * 0.000375;
  return { rawCostCents: raw, chargedCents: raw };
};

/** One billed turn of an agent. */
export type FakeBilledTurn = {
  id: string;
  usage: FakeUsage;
  at: number;
  /** How many `usage` reads have listed the turn so far. */
  reads: number;
};

export type FakeCursorBackendOptions = {
  /** Plays the model for each run request. Default: text "ok", turnEnded, end. */
  scenario?: Scenario;
  /** `/v1/models` items. Default {@link DEFAULT_FAKE_MODELS}. */
  models?: readonly FakeModel[];
  /** `reject`: 401 from the key exchange and `/v1/models`. Default `ok`. */
  auth?: FakeAuthMode;
  /** Server heartbeat period on agent streams; 0 disables. Default 5000 (the SDK stalls after 30 s). */
  heartbeatMs?: number;
  /** Write a conversation checkpoint when a run ends (needed for multi-turn history). Default true. */
  checkpoints?: boolean;
  /** Sees every agent-stream message in both directions (debugging aid). */
  trace?: FakeStreamTrace;
  /**
   * Called with a scenario's error when it throws while the stream is open (the stream is then failed
   * with `permission_denied`, which the SDK does not retry: `status ERROR` "[permission_denied] fake scenario threw: …").
   */
  onScenarioError?: (error: unknown, run: RunContext) => void;
  /**
   * A network round trip (ms) added to every request: each is logged on arrival and handled that long
   * after its body arrived, so a unary call answers, and an agent stream opens, one round trip late, and
   * a client message reaches its run that late (server messages then go out at once). Default 0; see
   * {@link FakeCursorBackend.setDelay}.
   */
  delayMs?: number;
};

export interface FakeCursorBackend {
  /** `http://127.0.0.1:<port>`; set as `CURSOR_BACKEND_URL` before importing the SDK. */
  readonly url: string;
  readonly port: number;
  /** Every HTTP request, in arrival order. */
  readonly requests: readonly FakeRequestLogEntry[];
  /** Every decoded `AgentRunRequest`, in arrival order (SDK retries included). */
  readonly runRequests: readonly FakeRunRequest[];
  /** Errors thrown by scenarios (other than the stream closing under them). */
  readonly scenarioErrors: readonly unknown[];
  /**
   * Every image received so far, in arrival order: user messages' (also on {@link FakeRunRequest.images}) and
   * tool results'. A copy.
   */
  receivedImages(): FakeReceivedImage[];
  /** Replaces the scenario for later run requests. */
  setScenario(scenario: Scenario): void;
  setAuth(auth: FakeAuthMode): void;
  /** Replaces how later `usage` reads price the billed turns (the default: {@link fakePrice}, at once). */
  setBilling(billing: FakeBilling): void;
  /** The turns billed so far, by the agent (conversation) id. */
  readonly billed: ReadonlyMap<string, readonly FakeBilledTurn[]>;
  /** The protobuf classes of the SDK (for decoding in tests). */
  readonly registry: ProtoRegistry;
  /** Ends open streams and stops listening. */
  close(): Promise<void>;
  /**
   * A backend crash: destroys every open connection without a trailer and stops listening, keeping the
   * port and the recorded requests. {@link restart} brings it back on the same port (the SDK read the
   * URL once at import).
   */
  kill(): Promise<void>;
  /** Listens again on the same port after {@link kill}. */
  restart(): Promise<void>;
  /**
   * Holds the requests to `path` (e.g. `/v1/models`) from now on: each is logged in {@link requests} on
   * arrival and answered only once the returned function is called (idempotent). A test uses it to keep
   * the SDK, and the bridge waiting on it, at a known point.
   */
  hold(path: string): () => void;
  /** Replaces {@link FakeCursorBackendOptions.delayMs} for requests that arrive from now on. */
  setDelay(delayMs: number): void;
}

const defaultScenario: Scenario = (run) => {
  run.text('ok');
  run.turnEnded({ inputTokens: 1, outputTokens: 1 });
};

const readBody = (request: IncomingMessage): Promise<Buffer> =>
  new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => resolve(Buffer.concat(chunks)));
    request.on('error', reject);
  });

const fakeAccessToken = (): string => {
  const part = (value: object): string => Buffer.from(JSON.stringify(value)).toString('base64url');
  return `${part({ alg: 'none', typ: 'JWT' })}.${part({ sub: 'fake-user', exp: Math.floor(Date.now() / 1000) + 3600 })}.fake`;
};

const sendJson = (response: ServerResponse, status: number, body: unknown): void => {
  response.writeHead(status, { 'content-type': 'application/json' });
  response.end(JSON.stringify(body));
};

const unauthenticated = { error: { code: 'unauthenticated', message: 'Invalid API key (fake)' } };

const asObject = (value: unknown): JsonObject => (isRecord(value) ? value : {});
const asString = (value: unknown): string => (typeof value === 'string' ? value : '');

/** The first request of each run (`runId`), in order: the runs, whatever the SDK re-sent. */
export const firstOfEachRun = (requests: readonly FakeRunRequest[]): FakeRunRequest[] => {
  const seen = new Set<string>();
  return requests.filter((request) => {
    if (seen.has(request.runId)) return false;
    seen.add(request.runId);
    return true;
  });
};

/** Summarizes a proto3-JSON `AgentRunRequest`. */

const summarizeRunRequest = (index: number, requestId: string, json: JsonObject): FakeRunRequest => {
  const action = asObject(json.action);
  const actionKind =
    Object.keys(action).find((key) => key.endsWith('Action') && key !== 'triggeringUserInfo') ?? 'none';
  const userMessage = asObject(asObject(action.userMessageAction).userMessage);
  const requestedModel = asObject(json.requestedModel);
  const parameters = Array.isArray(requestedModel.parameters) ? requestedModel.parameters : [];
  const tools = Array.isArray(asObject(json.mcpTools).mcpTools)
    ? (asObject(json.mcpTools).mcpTools as unknown[])
    : [];
  const mcpTools = tools.map((tool): FakeOfferedTool => {
    const entry = asObject(tool);
    return {
      name: asString(entry.name),
      toolName: asString(entry.toolName),
      providerIdentifier: asString(entry.providerIdentifier),
      description: asString(entry.description),
      inputSchema: entry.inputSchema,
    };
  });
  // `SelectedImage.dataOrBlobId`: the SDK (1.0.32) sends the bytes inline (`data`); `blobIdWithData`
  // carries them too. A bare `blobId` (bytes only in the SDK's KV store) is not recorded.
  const selectedImages = asObject(userMessage.selectedContext).selectedImages;
  const images = (Array.isArray(selectedImages) ? selectedImages : []).flatMap((image) => {
    const entry = asObject(image);
    const data = asString(entry.data) || asString(asObject(entry.blobIdWithData).data);
    if (!data) return [];
    const mimeType = asString(entry.mimeType);
    return [
      receivedImage(Buffer.from(data, 'base64'), {
        source: 'user-message',
        runRequestIndex: index,
        ...(mimeType === '' ? {} : { mimeType }),
      }),
    ];
  });
  return {
    index,
    requestId,
    runId: asString(json.runId) || requestId,
    conversationId: asString(json.conversationId),
    actionKind,
    text: asString(userMessage.text),
    images,
    ...(json.requestedModel === undefined
      ? {}
      : {
          requestedModel: {
            modelId: asString(requestedModel.modelId),
            parameters: parameters.map((parameter) => {
              const entry = asObject(parameter);
              return { id: asString(entry.id), value: asString(entry.value) };
            }),
          },
        }),
    mcpTools,
    ...(typeof json.customSystemPrompt === 'string' ? { customSystemPrompt: json.customSystemPrompt } : {}),
    conversationState: asObject(json.conversationState),
    json,
  };
};

/** Starts the fake on an ephemeral loopback port. */
export const startFakeCursorBackend = async (
  options: FakeCursorBackendOptions = {},
): Promise<FakeCursorBackend> => {
  const registry = await loadSdkProtoRegistry();
  const models = options.models ?? DEFAULT_FAKE_MODELS;
  const heartbeatMs = options.heartbeatMs ?? 5000;
  const checkpoints = options.checkpoints ?? true;
  let scenario = options.scenario ?? defaultScenario;
  let auth: FakeAuthMode = options.auth ?? 'ok';
  let delayMs = options.delayMs ?? 0;
  const requests: FakeRequestLogEntry[] = [];
  const runRequests: FakeRunRequest[] = [];
  const images: FakeReceivedImage[] = [];
  const scenarioErrors: unknown[] = [];
  const streams = new Map<string, FakeStream>();
  const runs = new Map<FakeStream, FakeRun>();
  /** Paths held by {@link FakeCursorBackend.hold}: requests wait for the promise. */
  const held = new Map<string, Promise<void>>();
  let callNumber = 0;
  let billing: FakeBilling = { price: fakePrice };
  const billed = new Map<string, FakeBilledTurn[]>();
  const bill = (conversationId: string, usage: FakeUsage): void => {
    const turns = billed.get(conversationId) ?? [];
    turns.push({
      id: `usage-${conversationId.slice(0, 8)}-${turns.length + 1}`,
      usage: { ...usage },
      at: Date.now(),
      reads: 0,
    });
    billed.set(conversationId, turns);
  };

  /** `V1AgentUsageResponse` for an agent: its billed turns, priced when their cost is due. */
  const agentUsage = (agentId: string): JsonObject => {
    const tokens = (usage: FakeUsage): JsonObject => {
      const counts = {
        inputTokens: usage.inputTokens,
        outputTokens: usage.outputTokens,
        cacheReadTokens: usage.cacheReadTokens ?? 0,
        cacheWriteTokens: usage.cacheWriteTokens ?? 0,
      };
      return { ...counts, totalTokens: counts.inputTokens + counts.outputTokens };
    };
    const runs = (billed.get(agentId) ?? []).map((turn) => {
      turn.reads += 1;
      const due = billing.price !== undefined && turn.reads > (billing.costAfterReads ?? 0);
      return {
        id: turn.id,
        usageUuid: turn.id,
        usage: tokens(turn.usage),
        ...(due && billing.price !== undefined ? { cost: billing.price(turn.usage) } : {}),
      };
    });
    const sum = (read: (run: (typeof runs)[number]) => number): number =>
      runs.reduce((total, run) => total + read(run), 0);
    const allPriced = runs.every((run) => run.cost !== undefined);
    return {
      totalUsage: {
        inputTokens: sum((run) => Number(run.usage.inputTokens)),
        outputTokens: sum((run) => Number(run.usage.outputTokens)),
        cacheReadTokens: sum((run) => Number(run.usage.cacheReadTokens)),
        cacheWriteTokens: sum((run) => Number(run.usage.cacheWriteTokens)),
        totalTokens: sum((run) => Number(run.usage.totalTokens)),
      },
      ...(billing.price !== undefined && allPriced
        ? {
            cost: {
              rawCostCents: sum((run) => run.cost?.rawCostCents ?? 0),
              chargedCents: sum((run) => run.cost?.chargedCents ?? 0),
            },
          }
        : {}),
      runs,
    };
  };

  const streamFor = (requestId: string): FakeStream => {
    let stream = streams.get(requestId);
    if (!stream) {
      stream = new FakeStream(requestId, registry, options.trace);
      streams.set(requestId, stream);
      const created = stream;
      created.onMessage((message) => onClientMessage(created, message));
    }
    return stream;
  };

  const onClientMessage = (stream: FakeStream, message: ClientMessage): void => {
    const existing = runs.get(stream);
    if (message.kind !== 'run-request') {
      existing?.handleClientMessage(message);
      return;
    }
    if (existing) return;
    const request = summarizeRunRequest(runRequests.length, stream.requestId, message.runRequest);
    runRequests.push(request);
    images.push(...request.images);
    const run = new FakeRun({
      onImage: (image) => images.push(image),
      registry,
      stream,
      request,
      checkpoints,
      nextCallNumber: () => ++callNumber,
      onUsage: (usage) => bill(request.conversationId, usage),
    });
    runs.set(stream, run);
    const play = scenario;
    void (async () => {
      try {
        // The records' pixel fields are set before the scenario (and so the client's answer) can go on.
        if (request.images.length > 0) await decodeReceivedImages(request.images);
        await play(run);
        await run.end();
      } catch (error) {
        if (!run.open) return;
        scenarioErrors.push(error);
        // A code the SDK does not retry, so a broken scenario fails the test fast.
        run.fail(`fake scenario threw: ${errorMessage(error)}`, 'permission_denied');
        options.onScenarioError?.(error, run);
      }
    })();
  };

  const handle = async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
    const path = (request.url ?? '/').split('?')[0] ?? '/';
    const headers: FakeRequestLogEntry['headers'] = {};
    for (const name of LOGGED_HEADERS) {
      const value = request.headers[name];
      if (typeof value === 'string') headers[name] = value;
    }
    const entry: FakeRequestLogEntry = { method: request.method ?? 'GET', path, headers, at: Date.now() };
    requests.push(entry);
    const delay = delayMs;
    const body = await readBody(request);
    if (delay > 0) await sleep(delay);
    const gate = held.get(path);
    if (gate !== undefined) await gate;

    if (path === '/auth/exchange_user_api_key') {
      if (auth === 'reject') return sendJson(response, 401, unauthenticated);
      return sendJson(response, 200, { accessToken: fakeAccessToken() });
    }
    if (path === '/v1/models') {
      if (auth === 'reject') return sendJson(response, 401, unauthenticated);
      return sendJson(response, 200, { items: models });
    }
    if (path === '/aiserver.v1.AnalyticsService/BootstrapStatsig') return sendJson(response, 200, {});
    const usageOf = /^\/v1\/agents\/([^/]+)\/usage$/.exec(path)?.[1];
    if (usageOf !== undefined && request.method === 'GET') {
      if (auth === 'reject') return sendJson(response, 401, unauthenticated);
      return sendJson(response, 200, agentUsage(decodeURIComponent(usageOf)));
    }
    if (path === '/agent.v1.AgentService/RunSSE') {
      const [payload] = decodeEnvelopes(body);
      const requestId = payload
        ? asString(asObject(registry.get('aiserver.v1.BidiRequestId').fromBinary(payload).toJson()).requestId)
        : '';
      entry.requestId = requestId;
      streamFor(requestId).attach(response, heartbeatMs);
      return;
    }
    if (path === '/aiserver.v1.BidiService/BidiAppend') {
      const append = asObject(registry.get('aiserver.v1.BidiAppendRequest').fromBinary(body).toJson());
      const requestId = asString(asObject(append.requestId).requestId);
      const binary = asString(append.dataBinary);
      const bytes = binary ? Buffer.from(binary, 'base64') : Buffer.from(asString(append.data), 'hex');
      const message = decodeClientMessage(registry, bytes);
      entry.requestId = requestId;
      entry.clientMessage = message.kind === 'other' ? message.name : message.kind;
      streamFor(requestId).receive(Number(append.appendSeqno ?? 0), message);
      response.writeHead(200, { 'content-type': 'application/proto' });
      response.end();
      return;
    }
    response.writeHead(200, { 'content-type': 'application/proto' });
    response.end();
  };

  const server = createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      if (!response.headersSent)
        sendJson(response, 500, { error: { code: 'internal', message: String(error) } });
      else response.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;

  return {
    url: `http://127.0.0.1:${port}`,
    port,
    requests,
    runRequests,
    receivedImages: () => [...images],
    scenarioErrors,
    billed,
    setBilling: (next: FakeBilling) => {
      billing = next;
    },
    registry,
    setScenario: (next) => {
      scenario = next;
    },
    setAuth: (next) => {
      auth = next;
    },
    setDelay: (next) => {
      delayMs = next;
    },
    close: async () => {
      for (const stream of streams.values()) stream.end();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
    kill: async () => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
    },
    restart: () =>
      new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, '127.0.0.1', () => {
          server.off('error', reject);
          resolve();
        });
      }),
    hold: (path) => {
      let release = (): void => undefined;
      const gate = new Promise<void>((resolve) => (release = resolve));
      held.set(path, gate);
      return () => {
        if (held.get(path) === gate) held.delete(path);
        release();
      };
    },
  };
};
