import { spawn } from 'node:child_process';
import { constants } from 'node:os';
import { resolveCursorApiKey } from '../config/cursor-auth.js';
import { exitCodes, type CliIo } from './cli-io.js';
import type { BridgeConfig } from '../config/load-config.js';
import { claudeModelName, readContextWindow, settingsSetAutoCompactWindow } from './client-context-window.js';
import { claudeLaunch, codexLaunch, type ClientLaunch, type ClientLaunchInput } from './client-env.js';
import { loadCommandConfig } from './load-command-config.js';
import { probeListener, type ListenerProbe } from './probe-listener.js';
import { startSessionServe, type SessionServe } from './session-serve.js';

export type ClientCommandOptions = {
  client: 'claude' | 'codex';
  /** The client's arguments, passed through untouched. */
  args: readonly string[];
  /** `--port`: where to look for a running serve, and where to start one (else the config's PORT, 3456). */
  port?: number;
  configPath?: string;
};

const launchers: Record<ClientCommandOptions['client'], (input: ClientLaunchInput) => ClientLaunch> = {
  claude: claudeLaunch,
  codex: codexLaunch,
};

const installHints: Record<ClientCommandOptions['client'], string> = {
  claude: 'npm install -g @anthropic-ai/claude-code',
  codex: 'npm install -g @openai/codex',
};

const describeHolder = (probe: ListenerProbe): string => {
  switch (probe.kind) {
    case 'cursor-bridge':
      return 'a cursor-bridge serve that is shutting down';
    case 'ccr':
      return 'Claude Code Router';
    case 'free':
    case 'other':
      return 'something that is not cursor-bridge';
    default: {
      const exhaustive: never = probe;
      return exhaustive;
    }
  }
};

/** Does the bridge at `baseUrl` take `token`? (`GET /v1/models` is behind its APIKEY, when it has one.) */
const acceptsToken = async (baseUrl: string, token: string): Promise<boolean> => {
  try {
    const response = await fetch(`${baseUrl}/v1/models`, {
      headers: { authorization: `Bearer ${token}` },
      signal: AbortSignal.timeout(5_000),
    });
    await response.body?.cancel();
    return response.status !== 401;
  } catch {
    return true;
  }
};

/**
 * Claude Code's launch with the context window of the Cursor model its conversation runs on (the model
 * name it will send, as the launch without a window sets it up), read from the bridge's `/v1/models`.
 */
const withContextWindow = async (
  io: CliIo,
  config: BridgeConfig,
  input: ClientLaunchInput,
): Promise<ClientLaunchInput> => {
  const name = claudeModelName(input.args, claudeLaunch(input).env);
  if (name === undefined) return input;
  const [contextWindow, autoCompactWindowSetting] = await Promise.all([
    readContextWindow({ baseUrl: input.baseUrl, token: input.token, config, name }),
    settingsSetAutoCompactWindow(io.env, io.cwd),
  ]);
  return contextWindow === undefined ? input : { ...input, contextWindow, autoCompactWindowSetting };
};

/** Runs the client to its end with stdio inherited; resolves with its exit status as a shell reports it. */
const runClient = (io: CliIo, launch: ClientLaunch): Promise<number> =>
  new Promise((resolve) => {
    const child = spawn(launch.command, launch.args, { stdio: 'inherit', env: launch.env });
    // Ctrl-C in the terminal reaches the client itself (it decides what it means); a SIGTERM or SIGHUP sent
    // to this process is passed on, so the client ends first and the serve is stopped after it.
    const ignore = (): void => {};
    const forward = (signal: NodeJS.Signals): void => void child.kill(signal);
    process.on('SIGINT', ignore).on('SIGTERM', forward).on('SIGHUP', forward);
    const done = (code: number): void => {
      process.off('SIGINT', ignore).off('SIGTERM', forward).off('SIGHUP', forward);
      resolve(code);
    };
    child.once('error', (error: NodeJS.ErrnoException) => {
      io.stderr(
        error.code === 'ENOENT'
          ? `cursor-bridge: cannot run ${launch.command}: it is not on PATH. Install it (${installHints[launch.command as ClientCommandOptions['client']]}) and try again.\n`
          : `cursor-bridge: cannot run ${launch.command}: ${error.message}\n`,
      );
      done(exitCodes.failure);
    });
    child.once('exit', (code, signal) =>
      done(code ?? 128 + (signal === null ? 0 : (constants.signals[signal] ?? 0))),
    );
  });

/**
 * `cursor-bridge claude|codex [args…]`: the client on Cursor's models. Looks for a cursor-bridge serve on
 * 127.0.0.1 at `--port` / the config's PORT (asking it who it is, not trusting the port); uses it when it
 * answers as one, is not draining, has a Cursor key and takes this session's key. Otherwise starts a serve
 * for the session — on that port when it is free, on any free port when something else holds it — and
 * stops it by its PID once the client exits. Resolves with the client's exit status; 2 when there is no
 * Cursor key to start a serve with, 1 when the running serve cannot be used or nothing could be started.
 */
export const runClientCommand = async (io: CliIo, options: ClientCommandOptions): Promise<number> => {
  const loaded = await loadCommandConfig(io, options.configPath);
  if (!loaded.ok) {
    io.stderr(`cursor-bridge: ${loaded.error}\n`);
    return exitCodes.usage;
  }
  const { path, config } = loaded.value;
  const apiKey = io.env['APIKEY']?.trim() || config.apiKey;
  const token = apiKey ?? 'cursor-bridge';
  const wanted = options.port ?? config.port;
  // Port 0 asks for any free port: nothing can be running there.
  const probe: ListenerProbe = wanted === 0 ? { kind: 'free' } : await probeListener('127.0.0.1', wanted);

  let serve: SessionServe | undefined;
  let port = wanted;
  if (probe.kind === 'cursor-bridge' && !probe.draining) {
    const baseUrl = `http://127.0.0.1:${wanted}`;
    if (probe.cursor?.ready === false) {
      io.stderr(
        `cursor-bridge: the serve at ${baseUrl} has no usable Cursor API key: ${probe.cursor.reason ?? ''}\n` +
          `Restart it with the key set, or stop it and run this command again: it starts a serve of its own.\n`,
      );
      return exitCodes.failure;
    }
    if (!(await acceptsToken(baseUrl, token))) {
      io.stderr(
        `cursor-bridge: the serve at ${baseUrl} refuses this session's key: set APIKEY to its APIKEY, or pass ` +
          `--port <n> to start a serve of this session's own there.\n`,
      );
      return exitCodes.failure;
    }
    io.stderr(`cursor-bridge: using the serve at ${baseUrl}\n`);
  } else {
    const auth = resolveCursorApiKey(config.cursor.apiKeyConfigured, io.env);
    if (!auth.ok) {
      io.stderr(
        `cursor-bridge: cannot start a serve for ${options.client}: ${auth.error.message} (Config: ${path}.)\n`,
      );
      return exitCodes.usage;
    }
    const started = await startSessionServe({
      port: probe.kind === 'free' ? wanted : 0,
      ...(options.configPath === undefined ? {} : { configPath: options.configPath }),
      env: io.env,
    });
    if (!started.ok) {
      io.stderr(`cursor-bridge: could not start a serve for ${options.client}:\n${started.error}\n`);
      return exitCodes.failure;
    }
    serve = started.value;
    port = serve.port;
    const moved = probe.kind === 'free' ? '' : ` (127.0.0.1:${wanted} is held by ${describeHolder(probe)})`;
    io.stderr(
      `cursor-bridge: started serve on http://127.0.0.1:${port} for this session${moved}; ` +
        `log: ${serve.logPath}. It stops when ${options.client} exits.\n`,
    );
  }

  const input: ClientLaunchInput = {
    baseUrl: `http://127.0.0.1:${port}`,
    token,
    router: config.router,
    env: io.env,
    args: options.args,
  };
  const launch = launchers[options.client](
    options.client === 'claude' ? await withContextWindow(io, config, input) : input,
  );
  for (const note of launch.notes) io.stderr(`${note}\n`);
  const session = serve;
  let serveDied = false;
  void session?.exited.then(() => (serveDied = true));
  const code = await runClient(io, launch);
  if (session !== undefined) {
    const diedFirst = serveDied;
    const stopped = await session.stop(diedFirst || code !== 0);
    if (diedFirst)
      io.stderr(
        `cursor-bridge: this session's serve exited (code ${String(stopped.code)}) before ${options.client} did; its log: ${session.logPath}\n`,
      );
  }
  return code;
};
