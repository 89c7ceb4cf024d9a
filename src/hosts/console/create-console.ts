/**
 * The console: a web page served by `serve` at `/console` to see what the bridge is doing (its live
 * conversations, models and Router, the process, the last hour's activity) and to edit the grounding
 * templates with a live preview. It shows figures and names only: nothing a user or a model said reaches
 * the page (the engine's conversation list carries none, and neither does anything else served here).
 *
 * Authentication is the server's (the API key, when the bridge has one) or the console's login cookie
 * (see `console-auth.ts`). Host facts — a live conversation's project path and platform — are shown and
 * previewed only to a request from the bridge's own machine, as `GET /debug/grounding` answers.
 */

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { readBodyText } from '../../../lib/read-body-text.js';
import { safeParseJson } from '../../protocols/shared/safe-parse-json.js';
import type { ConversationSummary } from '../../engine/engine.js';
import type { ConversationTotals } from '../../engine/usage-accounting.js';
import type { ActivitySeries } from '../../metrics/activity-history.js';
import type { HostFacts } from '../../workspace/host-facts.js';
import { exampleHostFacts, isTemplateName, type TemplateEditor } from '../../workspace/template-editor.js';
import { templatePlaceholders } from '../../workspace/template-placeholders.js';
import type { TemplateProblem } from '../../workspace/template-store.js';
import type { SessionGrounding } from '../../workspace/workspace-service.js';
import { ConsoleAssets } from './console-assets.js';
import { ConsoleAuth, consoleRequestHeader } from './console-auth.js';
import { ConsoleLive } from './console-live.js';
import { errorMessage } from '../../../lib/error-message.js';

/** What the server tells the console of a request (see `BridgeServerOptions.console`). */
export type ConsoleRequestContext = {
  /** The path, `/console` or below it. */
  path: string;
  /** The request passed the server's API key check (or the bridge has no key). */
  authorized: boolean;
  /** The bridge has an API key. */
  keyRequired: boolean;
  /** The request comes from the bridge's own machine (a loopback peer, not relayed by a proxy). */
  local: boolean;
  /** Whether `key` is the bridge's API key. */
  verifyKey: (key: string) => boolean;
};

/** The process as the console shows it. */
export type ConsoleProcess = {
  mode: string;
  startedAt: string;
  maxSessions: number;
  draining: boolean;
  /** The pre-warmed workspace pool; null when it is off. */
  warmPool: { size: number; state: string } | null;
  sessions: number;
  inFlight: number;
  parkedCalls: number;
};

/** A model of the catalog as the console lists it. */
export type ConsoleModel = {
  id: string;
  displayName?: string;
  aliases?: readonly string[];
  contextWindow?: number;
};

export type ConsoleSources = {
  logger: Logger;
  conversations: () => { conversations: ConversationSummary[]; sideCalls: ConversationTotals };
  process: () => Promise<ConsoleProcess>;
  history: () => ActivitySeries;
  /** The catalog as `GET /v1/models` lists it, and the Router. */
  models: () => Promise<{ models: ConsoleModel[]; router: Record<string, unknown> }>;
  editor: TemplateEditor;
  /** The template store's directories and current problems. */
  templateState: () => {
    defaultDir: string;
    overrideDir: string | null;
    problems: readonly TemplateProblem[];
  };
  /** The latest turn's host facts and workspace of each live conversation. */
  grounding: () => SessionGrounding[];
  /** The workspace an example preview renders for. */
  exampleWorkspaceDir: string;
};

export type BridgeConsole = {
  /** The server's handler for `/console` and everything below it. */
  handle: (
    request: IncomingMessage,
    response: ServerResponse,
    context: ConsoleRequestContext,
  ) => Promise<void>;
  /** Tell open pages the templates were reloaded (what changed, what was rejected). */
  templatesReloaded: (report: { changed: readonly string[]; problems: readonly TemplateProblem[] }) => void;
  /** Pages with the live feed open. */
  readonly openPages: number;
  close: () => void;
};

/** Live state every tick; the hour's history every this many ticks (and at once). */
const tickMs = 2_000;
const historyEveryTicks = 5;
const bodyLimit = 1024 * 1024;

type Answer = { status: number; body: unknown; headers?: Record<string, string> };

const errorAnswer = (status: number, type: string, message: string): Answer => ({
  status,
  body: { error: { type, message } },
});

const sendAnswer = (response: ServerResponse, { status, body, headers }: Answer): void => {
  const text = JSON.stringify(body);
  response.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
    'cache-control': 'no-store',
    ...headers,
  });
  response.end(text);
};

/**
 * Whether a `Host` header names this machine by address or as `localhost`. Without an API key that is the
 * console's guard against DNS rebinding: a site whose name an attacker points at 127.0.0.1 gets the page's
 * origin, but its requests still say its name.
 */
const isAddressHost = (host: string | undefined): boolean => {
  if (host === undefined) return false;
  const name = (URL.parse(`http://${host}`)?.hostname ?? '').toLowerCase();
  return name === 'localhost' || name.startsWith('[') || /^\d{1,3}(\.\d{1,3}){3}$/.test(name);
};

/** A host-facts summary for the session picker: where the project is, what it runs on. */
const factsSummary = (facts: HostFacts | undefined): { root: string | null; platform: string | null } => ({
  root: facts?.root ?? null,
  platform: facts?.platform ?? null,
});

export const createConsole = (sources: ConsoleSources): BridgeConsole => {
  const assets = new ConsoleAssets();
  const auth = new ConsoleAuth();
  const startedAt = Date.now();
  let cpu = { at: process.hrtime.bigint(), usage: process.cpuUsage() };

  /** Process CPU since the previous tick, in percent of one core. */
  const cpuPercent = (): number => {
    const now = { at: process.hrtime.bigint(), usage: process.cpuUsage() };
    const wallMicros = Number(now.at - cpu.at) / 1000;
    const used = now.usage.user - cpu.usage.user + (now.usage.system - cpu.usage.system);
    cpu = now;
    return wallMicros <= 0 ? 0 : Math.round((used / wallMicros) * 1000) / 10;
  };

  const state = async (): Promise<unknown> => {
    const memory = process.memoryUsage();
    return {
      at: new Date().toISOString(),
      process: {
        version: await assets.version(),
        pid: process.pid,
        ...(await sources.process()),
        uptimeSeconds: Math.round((Date.now() - startedAt) / 1000),
        rssBytes: memory.rss,
        heapUsedBytes: memory.heapUsed,
        cpuPercent: cpuPercent(),
      },
      ...sources.conversations(),
    };
  };

  // One state per tick for every open page; the hour's history at opening and every few ticks.
  const live = new ConsoleLive({
    intervalMs: tickMs,
    frames: async (tick) => [
      { event: 'state', data: await state() },
      ...(tick % historyEveryTicks === 0 ? [{ event: 'history', data: sources.history() }] : []),
    ],
    onError: (error) => sources.logger.warn({ err: error }, 'the console could not make its live state'),
  });

  const readJson = async (request: IncomingMessage): Promise<{ ok: true; value: unknown } | Answer> => {
    const body = await readBodyText(request, bodyLimit);
    if (!body.ok)
      return body.error.reason === 'too-large'
        ? errorAnswer(413, 'request_too_large', `The body exceeds the console's ${bodyLimit}-byte limit.`)
        : errorAnswer(400, 'invalid_request_error', 'The request body was not received whole.');
    const parsed = safeParseJson(body.value);
    if (!parsed.ok || typeof parsed.value !== 'object' || parsed.value === null)
      return errorAnswer(400, 'invalid_request_error', 'The body must be a JSON object.');
    return { ok: true, value: parsed.value };
  };

  const stringField = (value: unknown, field: string): string | undefined => {
    const found = (value as Record<string, unknown>)[field];
    return typeof found === 'string' ? found : undefined;
  };

  const templatesAnswer = async (local: boolean): Promise<Answer> => {
    const { defaultDir, overrideDir, problems } = sources.templateState();
    return {
      status: 200,
      body: {
        mode: sources.editor.mode,
        defaultDir,
        overrideDir,
        problems,
        templates: await sources.editor.list(),
        // A live conversation's host facts go only to the bridge's own machine.
        sessions: local
          ? sources
              .grounding()
              .sort((left, right) => right.preparedAt - left.preparedAt)
              .map((session) => ({
                session: session.sessionKey,
                lastTurnAt: new Date(session.preparedAt).toISOString(),
                ...factsSummary(session.facts),
              }))
          : null,
        example: factsSummary(exampleHostFacts()),
        placeholders: templatePlaceholders,
      },
    };
  };

  const previewAnswer = async (request: IncomingMessage, local: boolean): Promise<Answer> => {
    const body = await readJson(request);
    if (!('ok' in body)) return body;
    const name = stringField(body.value, 'name');
    const text = stringField(body.value, 'text');
    const session = stringField(body.value, 'session');
    if (name === undefined || !isTemplateName(name))
      return errorAnswer(400, 'invalid_request_error', `Unknown template ${JSON.stringify(name ?? null)}.`);
    if (text === undefined)
      return errorAnswer(400, 'invalid_request_error', 'The body needs "text", the template draft.');
    let target = { facts: exampleHostFacts(), workspaceDir: sources.exampleWorkspaceDir };
    let against = 'example';
    if (session !== undefined) {
      if (!local)
        return errorAnswer(
          403,
          'permission_error',
          "A live conversation's host facts are shown only on the bridge's own machine; preview against the example environment.",
        );
      const found = sources.grounding().find((entry) => entry.sessionKey === session);
      if (found === undefined)
        return errorAnswer(404, 'not_found_error', 'That conversation is no longer live; pick another.');
      target = { facts: found.facts, workspaceDir: found.workspaceDir };
      against = 'session';
    }
    return { status: 200, body: { against, ...sources.editor.preview(name, text, target) } };
  };

  /** The override directory could not be written (missing, inside the defaults, a file system error). */
  const unwritable = (name: string, error: unknown): Answer => {
    const message = errorMessage(error);
    sources.logger.warn({ err: error, template: name }, 'the console could not change a template override');
    return errorAnswer(409, 'conflict_error', `The override of ${name} could not be changed: ${message}`);
  };

  const saveAnswer = async (request: IncomingMessage, name: string): Promise<Answer> => {
    const body = await readJson(request);
    if (!('ok' in body)) return body;
    const text = stringField(body.value, 'text');
    if (!isTemplateName(name))
      return errorAnswer(404, 'not_found_error', `Unknown template ${JSON.stringify(name)}.`);
    if (text === undefined)
      return errorAnswer(400, 'invalid_request_error', 'The body needs "text", the template to save.');
    let saved: Awaited<ReturnType<TemplateEditor['save']>>;
    try {
      saved = await sources.editor.save(name, text);
    } catch (error) {
      return unwritable(name, error);
    }
    if (!saved.ok)
      return { status: 422, body: { error: { type: 'invalid_template', issues: saved.issues } } };
    sources.logger.info({ template: name, path: saved.path }, 'template saved from the console');
    return { status: 200, body: { saved: saved.path } };
  };

  const revertAnswer = async (name: string): Promise<Answer> => {
    if (!isTemplateName(name))
      return errorAnswer(404, 'not_found_error', `Unknown template ${JSON.stringify(name)}.`);
    let removed: boolean;
    try {
      removed = await sources.editor.revert(name);
    } catch (error) {
      return unwritable(name, error);
    }
    if (removed) sources.logger.info({ template: name }, 'template override removed from the console');
    return { status: 200, body: { reverted: removed } };
  };

  const loginAnswer = async (request: IncomingMessage, context: ConsoleRequestContext): Promise<Answer> => {
    const body = await readJson(request);
    if (!('ok' in body)) return body;
    const key = stringField(body.value, 'key') ?? '';
    if (!context.verifyKey(key))
      return errorAnswer(
        401,
        'authentication_error',
        "That is not this bridge's API key (APIKEY in its config).",
      );
    return { status: 200, body: { ok: true }, headers: { 'set-cookie': auth.loginCookie() } };
  };

  /** The API's answer, or undefined when the path is none of its routes. */
  const api = async (
    request: IncomingMessage,
    response: ServerResponse,
    route: string,
    context: ConsoleRequestContext,
  ): Promise<Answer | undefined> => {
    const method = request.method ?? 'GET';
    const changing = method !== 'GET' && method !== 'HEAD';
    if (changing && request.headers[consoleRequestHeader] === undefined)
      return errorAnswer(
        403,
        'permission_error',
        `Changing console requests must carry the ${consoleRequestHeader} header (sent by the console page).`,
      );
    if (route === 'login' && method === 'POST') return loginAnswer(request, context);
    if (route === 'logout' && method === 'POST')
      return { status: 200, body: { ok: true }, headers: { 'set-cookie': auth.logoutCookie() } };
    if (!context.authorized && !auth.hasLogin(request))
      return errorAnswer(
        401,
        'authentication_error',
        "The console needs this bridge's API key: log in with it.",
      );
    if (route === 'state' && method === 'GET') return { status: 200, body: await state() };
    if (route === 'history' && method === 'GET') return { status: 200, body: sources.history() };
    if (route === 'models' && method === 'GET') return { status: 200, body: await sources.models() };
    if (route === 'events' && method === 'GET') {
      live.open(response);
      return undefined;
    }
    if (route === 'templates' && method === 'GET') return templatesAnswer(context.local);
    if (route === 'templates/preview' && method === 'POST') return previewAnswer(request, context.local);
    if (route.startsWith('templates/')) {
      // A name that is not valid percent-encoding names no template.
      const encoded = route.slice('templates/'.length);
      let name: string;
      try {
        name = decodeURIComponent(encoded);
      } catch {
        return errorAnswer(404, 'not_found_error', `Unknown template ${JSON.stringify(encoded)}.`);
      }
      if (method === 'PUT') return saveAnswer(request, name);
      if (method === 'DELETE') return revertAnswer(name);
    }
    return errorAnswer(404, 'not_found_error', `No console route ${method} /console/api/${route}.`);
  };

  const handle = async (
    request: IncomingMessage,
    response: ServerResponse,
    context: ConsoleRequestContext,
  ): Promise<void> => {
    const { path } = context;
    if (!context.keyRequired && !isAddressHost(request.headers.host))
      return sendAnswer(
        response,
        errorAnswer(
          403,
          'permission_error',
          'Without an API key the console answers only requests addressed to an IP address or localhost (a page of another site whose name resolves here must not reach it). Open it by address, or give the bridge an APIKEY.',
        ),
      );
    if (path.startsWith('/console/api/')) {
      let answer: Answer | undefined;
      try {
        answer = await api(request, response, path.slice('/console/api/'.length), context);
      } catch (error) {
        sources.logger.error({ err: error, path }, 'console request failed');
        answer = errorAnswer(500, 'api_error', 'The console could not answer; the bridge log says why.');
      }
      if (answer !== undefined && !response.headersSent) sendAnswer(response, answer);
      return;
    }
    if (request.method !== 'GET' && request.method !== 'HEAD')
      return sendAnswer(
        response,
        errorAnswer(405, 'invalid_request_error', `Method ${request.method} is not allowed on ${path}.`),
      );
    const name = path === '/console' || path === '/console/' ? 'index.html' : path.slice('/console/'.length);
    const asset = await assets.get(name);
    if (asset === undefined)
      return sendAnswer(response, errorAnswer(404, 'not_found_error', `No console file ${path}.`));
    response.writeHead(200, {
      'content-type': asset.contentType,
      'content-length': asset.body.length,
      'cache-control': 'no-cache',
      'x-content-type-options': 'nosniff',
      // The page loads only its own files, and talks only to its own bridge.
      'content-security-policy':
        "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
      'referrer-policy': 'no-referrer',
    });
    response.end(request.method === 'HEAD' ? undefined : asset.body);
  };

  return {
    handle,
    templatesReloaded: (report) =>
      live.publish({
        event: 'templates',
        data: { at: new Date().toISOString(), changed: report.changed, problems: report.problems },
      }),
    get openPages() {
      return live.size;
    },
    close: () => live.close(),
  };
};
