import { restrictHostWithoutApiKey, type BridgeConfig } from '../config/load-config.js';

/** Where `serve` listens and with which client key; or why it refuses to start. */
export type ListenDecision = { ok: true; host: string; apiKey?: string } | { ok: false; message: string };

/**
 * The listen host: `--host`, else `$HOST`, else the config's `HOST`; the client key: `$APIKEY`, else the
 * config's `APIKEY`. A non-loopback host needs a key (anyone who reaches the port would use the
 * user's Cursor account). Without one, `serve` refuses when the host was asked for explicitly
 * (`--host`, `$HOST`) or when it runs in a container, where 127.0.0.1 is unreachable from outside and
 * a fallback would only look healthy. A config-file `HOST` outside a container keeps CCR's own rule
 * (the file is CCR's too): 127.0.0.1, with the warning `loadConfig` already returned.
 */
export const decideListenHost = (input: {
  flagHost?: string;
  env: Readonly<Record<string, string | undefined>>;
  config: Pick<BridgeConfig, 'host' | 'hostWithoutApiKey' | 'apiKey'>;
  inContainer: boolean;
}): ListenDecision => {
  const envValue = (name: string): string | undefined => {
    const value = input.env[name]?.trim();
    return value === undefined || value === '' ? undefined : value;
  };
  const apiKey = envValue('APIKEY') ?? input.config.apiKey;
  const envHost = envValue('HOST');
  const [host, source] =
    input.flagHost !== undefined
      ? [input.flagHost, '--host']
      : envHost !== undefined
        ? [envHost, '$HOST']
        : [input.config.hostWithoutApiKey ?? input.config.host, 'HOST in the config'];
  const withKey = apiKey === undefined ? {} : { apiKey };
  if (restrictHostWithoutApiKey(host, apiKey).warning === undefined) return { ok: true, host, ...withKey };
  if (source === 'HOST in the config' && !input.inContainer)
    return { ok: true, host: input.config.host, ...withKey };
  return {
    ok: false,
    message:
      `${source} ${host} needs APIKEY: anyone who can reach that address could use your Cursor account. ` +
      `Set APIKEY (in the environment or the config; clients send it as x-api-key or Authorization: Bearer), or listen on 127.0.0.1` +
      (input.inContainer
        ? ' (inside a container, 127.0.0.1 is unreachable from outside it, so there is no fallback).'
        : '.'),
  };
};
