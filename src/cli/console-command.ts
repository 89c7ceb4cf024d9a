import { exitCodes, type CliIo } from './cli-io.js';
import { loadCommandConfig } from './load-command-config.js';
import { defaultBridgeUrl } from './templates-live.js';
import { UsageError } from './usage-error.js';
import { errorMessage } from '../../lib/error-message.js';

/** The console's path on a running `serve`. */
export const consolePath = '/console';

export type ConsoleCommandOptions = { configPath?: string; url?: string };

/**
 * `cursor-bridge console [--url URL]`: prints the console's address on the running `serve` (by this config:
 * its HOST when loopback, else 127.0.0.1, and its PORT) once that bridge answers there. Exit 1 when no
 * bridge answers (with what to run), 2 for a bad --url. The page asks for the API key itself when the
 * bridge has one; the key is never put in the URL.
 */
export const runConsoleCommand = async (io: CliIo, options: ConsoleCommandOptions): Promise<number> => {
  const loaded = await loadCommandConfig(io, options.configPath);
  if (!loaded.ok) throw new UsageError(loaded.error);
  const { config } = loaded.value;
  const base = options.url ?? defaultBridgeUrl(io, config);
  const target = URL.parse(consolePath, base);
  if (target === null || (target.protocol !== 'http:' && target.protocol !== 'https:')) {
    io.stderr(`cursor-bridge: --url must be the bridge's http:// address, got "${base}"\n`);
    return exitCodes.usage;
  }
  try {
    const response = await fetch(new URL('/health', target), { signal: AbortSignal.timeout(10_000) });
    await response.body?.cancel();
  } catch (error) {
    const cause = error instanceof Error && error.cause instanceof Error ? error.cause : error;
    io.stderr(
      `cursor-bridge: no bridge answers at ${target.origin} (${errorMessage(cause)}). ` +
        'Start it with `cursor-bridge serve` (or pass its address with --url); the console is then at:\n',
    );
    io.stdout(`${target.href}\n`);
    return exitCodes.failure;
  }
  io.stdout(`${target.href}\n`);
  if (config.apiKey !== undefined)
    io.stderr('cursor-bridge: this bridge has an API key (APIKEY): the page asks for it once.\n');
  return exitCodes.ok;
};
