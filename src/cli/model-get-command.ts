import { readFile, stat } from 'node:fs/promises';
import { pino } from 'pino';
import { resolveCursorApiKey } from '../config/cursor-auth.js';
import { loadConfig } from '../config/load-config.js';
import { toTurnError } from '../turn/turn-error.js';
import { CursorUpstream } from '../upstream/cursor/cursor-upstream.js';
import { InMemoryAgentStore } from '../upstream/cursor/in-memory-agent-store.js';
import { isTransient, resolveInstalledTransformer } from './ccr-install-command.js';
import { exitCodes, type CliIo } from './cli-io.js';
import { resolveConfigPath } from './config-path.js';
import { applyModelList, createDefaultConfigText } from './model-get.js';
import { writeConfigFile } from './write-config-file.js';

export type ModelGetOptions = { provider: string; configPath?: string };

/**
 * `cursor-bridge model get cursor`: list Cursor's catalog through the SDK (same auth rules as `serve`)
 * and add the missing ids to the Cursor provider's `models`, keeping the rest of the file as it was
 * (written through a symlink, with its mode). An empty catalog writes nothing and exits 1.
 */
export const runModelGet = async (io: CliIo, options: ModelGetOptions): Promise<number> => {
  const path = resolveConfigPath(io, options.configPath);
  const config = await loadConfig({ path, env: io.env, homedir: io.homedir });
  for (const warning of config.warnings) io.stderr(`cursor-bridge: warning: ${warning}\n`);
  if (options.provider.toLowerCase() !== config.cursor.providerName.toLowerCase()) {
    io.stderr(
      `cursor-bridge: ${path}: provider "${options.provider}" is not a Cursor provider (name "cursor", or "cursor-sdk" in transformer.use); the Cursor provider here is "${config.cursor.providerName}".\n`,
    );
    return exitCodes.usage;
  }
  if (config.file.found) {
    // Check the file can take the list before asking Cursor for it (e.g. no Providers at all).
    const preflight = applyModelList(await readFile(path, 'utf8'), [], { providerName: options.provider });
    if (!preflight.ok) {
      io.stderr(`cursor-bridge: ${path}: ${preflight.error}\n`);
      return exitCodes.usage;
    }
  }
  const auth = resolveCursorApiKey(config.cursor.apiKeyConfigured, io.env);
  if (!auth.ok) {
    io.stderr(`cursor-bridge: ${auth.error.message}\n`);
    return exitCodes.failure;
  }
  const upstream = new CursorUpstream({
    auth: { ok: true, apiKey: auth.value.apiKey },
    logger: pino({ level: 'silent' }),
    mode: config.cursor.mode,
    sandboxEnabled: false,
    createStore: () => new InMemoryAgentStore(),
  });
  let ids: string[];
  try {
    ids = (await upstream.listModels()).map((model) => model.id);
  } catch (error) {
    io.stderr(`cursor-bridge: could not list Cursor models: ${toTurnError(error).message}\n`);
    return exitCodes.failure;
  }
  io.stdout(`Cursor catalog: ${ids.length} models\n`);
  if (ids.length === 0) {
    io.stderr(
      `cursor-bridge: Cursor returned no models, so ${path} was left as it was. ` +
        `Confirm auth (CURSOR_API_KEY, or the Cursor provider's api_key) and that the provider uses cursor-sdk ` +
        `(named "cursor", or "cursor-sdk" in its transformer.use).\n`,
    );
    return exitCodes.failure;
  }

  let text: string;
  let added: string[];
  if (config.file.found) {
    const result = applyModelList(await readFile(path, 'utf8'), ids, { providerName: options.provider });
    if (!result.ok) {
      io.stderr(`cursor-bridge: ${path}: ${result.error}\n`);
      return exitCodes.usage;
    }
    text = result.text;
    added = result.added;
  } else {
    // The new file is the one `ccr install` writes, so CCR loads it as it is; a transformer that is not
    // installed (a checkout without its build) or only in npx's cache would leave CCR a dead path.
    const transformer = await installedTransformer();
    const durable = transformer !== undefined && !isTransient(transformer) ? transformer : undefined;
    if (durable === undefined) {
      const why =
        transformer === undefined
          ? 'the CCR transformer cursor-bridge/ccr is not installed here'
          : `${transformer} is in npx's temporary cache`;
      io.stderr(
        `cursor-bridge: note: ${path} gets no transformers entry (${why}): serve needs none; for CCR, install cursor-bridge (npm install -g cursor-bridge) and run cursor-bridge ccr install\n`,
      );
    }
    text = createDefaultConfigText(ids, durable);
    added = ids;
  }
  if (added.length === 0) {
    io.stdout(`${path}: every catalog model is already listed; nothing changed.\n`);
    return exitCodes.ok;
  }
  await writeConfigFile(path, text);
  io.stdout(
    `${path}: added ${added.length} model(s): ${added.join(', ')}\nRestart cursor-bridge to pick up the list.\n`,
  );
  return exitCodes.ok;
};

/** The installed CCR transformer's path, or undefined when it does not resolve to a file. */
const installedTransformer = async (): Promise<string | undefined> => {
  try {
    const path = resolveInstalledTransformer();
    await stat(path);
    return path;
  } catch {
    return undefined;
  }
};
