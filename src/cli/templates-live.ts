import { z } from 'zod';
import type { BridgeConfig } from '../config/load-config.js';
import { safeParseJson } from '../protocols/shared/safe-parse-json.js';
import { exitCodes, type CliIo } from './cli-io.js';
import { envBlockFormats } from '../workspace/env-block-formats.js';
import { describeFacts, formatSection } from './templates-format.js';
import { errorMessage } from '../../lib/error-message.js';

/** The bridge's route this command reads (`src/hosts/http/create-server.ts`). */
export const groundingPath = '/debug/grounding';

const textSchema = z.looseObject({ template: z.string(), origin: z.string(), text: z.string() });

/** What this command prints of `GET /debug/grounding` (`GroundingPreview`); other fields are ignored. */
const previewSchema = z.looseObject({
  mode: z.string(),
  templates: z.looseObject({
    problems: z.array(z.looseObject({ path: z.string(), message: z.string() })),
  }),
  sessions: z.array(
    z.looseObject({
      session: z.string(),
      lastTurnAt: z.string(),
      workspaceDir: z.string(),
      facts: z
        .looseObject({
          source: z.enum(['claude-code', 'opencode', 'codex', 'env-block']),
          facts: z.array(z.looseObject({ key: z.string(), value: z.string() })),
          root: z.string().optional(),
          platform: z.string().optional(),
          shell: z.string().optional(),
          osVersion: z.string().optional(),
          isGitRepo: z.boolean().optional(),
        })
        .nullable(),
      files: z.array(z.looseObject({ path: z.string(), origin: z.string(), text: z.string().nullable() })),
      denyMessage: textSchema.nullable(),
      prompt: z.looseObject({ head: textSchema, tail: textSchema }),
    }),
  ),
});

type Preview = z.infer<typeof previewSchema>;

const isLoopbackHost = (host: string): boolean =>
  host === 'localhost' || host === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);

/**
 * Where `serve` listens by this config, as seen from this machine: its host when that is a loopback
 * address (`$HOST` over the config's `HOST`, as `serve` reads them), else 127.0.0.1, which a listener
 * on every interface also answers; and its `PORT`.
 */
export const defaultBridgeUrl = (io: CliIo, config: Pick<BridgeConfig, 'host' | 'port'>): string => {
  const envHost = io.env['HOST']?.trim();
  const host = envHost !== undefined && envHost !== '' ? envHost : config.host;
  const local = isLoopbackHost(host) ? host : '127.0.0.1';
  return `http://${local.includes(':') ? `[${local}]` : local}:${config.port}`;
};

const errorMessageOf = (body: string): string | undefined => {
  const parsed = safeParseJson(body);
  if (!parsed.ok || typeof parsed.value !== 'object' || parsed.value === null) return undefined;
  const error = (parsed.value as { error?: { message?: unknown } }).error;
  return typeof error?.message === 'string' ? error.message : undefined;
};

const describeText = (what: string, text: { template: string; origin: string }, where: string): string =>
  `${what} from ${text.template} (${text.origin}), ${where}`;

const formatSession = (session: Preview['sessions'][number]): string => {
  const { facts } = session;
  const parts = [
    `\n######## conversation ${session.session}: latest turn ${session.lastTurnAt} ########\n`,
    `Workspace: ${session.workspaceDir}\n`,
    facts === null
      ? 'Host facts: none reported (the no-root wording applies)\n'
      : `Host facts (${envBlockFormats[facts.source].label}):\n${describeFacts(facts)}`,
  ];
  for (const file of session.files) {
    parts.push(
      formatSection(
        `${file.path} (${file.origin}), in the workspace`,
        file.text ?? '(not in the workspace: the conversation just ended)',
      ),
    );
  }
  if (session.denyMessage !== null) {
    const title = describeText('deny message', session.denyMessage, 'baked into the hook script');
    parts.push(formatSection(title, session.denyMessage.text));
  }
  const { head, tail } = session.prompt;
  parts.push(formatSection(describeText('prompt head', head, 'as sent with the latest turn'), head.text));
  parts.push(formatSection(describeText('prompt tail', tail, 'as sent with the latest turn'), tail.text));
  return parts.join('');
};

/**
 * `cursor-bridge templates live [--url URL]`: prints what the agents of a running `serve` are grounded
 * with, per live conversation, from its `GET /debug/grounding` (sent with `$APIKEY`, else the config's
 * `APIKEY`). Exit 1 when the bridge cannot be reached or answers with an error, or reports a template
 * problem; 2 for a bad --url or a refused API key (configuration).
 */
export const runTemplatesLive = async (
  io: CliIo,
  config: BridgeConfig,
  url: string | undefined,
): Promise<number> => {
  const base = url ?? defaultBridgeUrl(io, config);
  const target = URL.parse(groundingPath, base);
  if (target === null || (target.protocol !== 'http:' && target.protocol !== 'https:')) {
    io.stderr(`cursor-bridge: --url must be the bridge's http:// address, got "${base}"\n`);
    return exitCodes.usage;
  }
  const envKey = io.env['APIKEY']?.trim();
  const apiKey = envKey !== undefined && envKey !== '' ? envKey : config.apiKey;
  let response: Response;
  let body: string;
  try {
    response = await fetch(target, {
      headers: apiKey === undefined ? {} : { 'x-api-key': apiKey },
      signal: AbortSignal.timeout(30_000),
    });
    body = await response.text();
  } catch (error) {
    const cause = error instanceof Error && error.cause instanceof Error ? error.cause : error;
    io.stderr(
      `cursor-bridge: cannot reach the bridge at ${target.origin} (${errorMessage(cause)}). ` +
        'Is `cursor-bridge serve` running there? Pass its address with --url.\n',
    );
    return exitCodes.failure;
  }
  if (!response.ok) {
    const message = errorMessageOf(body) ?? body.slice(0, 500);
    if (response.status === 401) {
      io.stderr(
        `cursor-bridge: the bridge at ${target.origin} requires its API key: set APIKEY (in the environment or the config) to the one it runs with. It said: ${message}\n`,
      );
      return exitCodes.usage;
    }
    if (response.status === 404) {
      io.stderr(
        `cursor-bridge: the bridge at ${target.origin} has no ${groundingPath} (a cursor-bridge older than this command?). It said: ${message}\n`,
      );
      return exitCodes.failure;
    }
    io.stderr(`cursor-bridge: ${target.href} answered ${response.status}: ${message}\n`);
    return exitCodes.failure;
  }
  const json = safeParseJson(body);
  const parsed = json.ok ? previewSchema.safeParse(json.value) : undefined;
  if (parsed?.success !== true) {
    io.stderr(
      `cursor-bridge: ${target.href} did not answer with a grounding preview: ${body.slice(0, 500)}\n`,
    );
    return exitCodes.failure;
  }
  const preview = parsed.data;
  const count = preview.sessions.length;
  io.stdout(
    `Live grounding at ${target.origin} (cursorMode ${preview.mode}): ` +
      (count === 0
        ? 'no live conversation; a conversation appears here after its first turn.\n'
        : `${count} live conversation(s), latest turn first.\n`),
  );
  for (const problem of preview.templates.problems) {
    io.stdout(
      `PROBLEM: ${problem.message.startsWith(problem.path) ? '' : `${problem.path}: `}${problem.message}\n`,
    );
  }
  for (const session of preview.sessions) io.stdout(formatSession(session));
  return preview.templates.problems.length === 0 ? exitCodes.ok : exitCodes.failure;
};
