/** Claude Code Router 3's fixed ports: gateway 3456, its core in compatibility mode 3457, admin UI 3458. */
export const ccr3Ports = { first: 3456, last: 3458 } as const;

/** What answers on a busy port, as `probeListener` found it (`free` and `other`: nothing recognised). */
export type PortHolder = 'cursor-bridge' | 'ccr' | 'free' | 'other';

const holderSentence = (holder: PortHolder | undefined, port: number): string => {
  switch (holder) {
    case undefined:
    case 'free':
      return '';
    case 'cursor-bridge':
      return ' A cursor-bridge server already answers there: use it (`cursor-bridge claude` does), or stop it first.';
    case 'ccr':
      return (
        ' Claude Code Router answers there (its default port is 3456 too): with CCR the cursor-sdk transformer ' +
        'runs inside CCR and needs no serve; otherwise stop CCR (ccr stop) or pick another port.'
      );
    case 'other':
      return (
        ` What holds it does not answer as cursor-bridge or Claude Code Router; \`ss -ltnp 'sport = :${port}'\` ` +
        `(or \`lsof -i :${port}\`) names the process.`
      );
    default: {
      const exhaustive: never = holder;
      return exhaustive;
    }
  }
};

/**
 * The one line a command prints when it cannot listen. A port in use names the flag (and config key) that
 * moves it, what answers there when `holder` is known, and, for CCR 3's ports, that CCR 3 is the likely owner
 * and what to do instead.
 */

import { errorMessage } from '../../lib/error-message.js';
export const describeListenFailure = (
  error: unknown,
  where: { command: 'serve' | 'mcp-host'; host: string; port: number; holder?: PortHolder },
): string => {
  const { command, host, port } = where;
  const reason = errorMessage(error);
  if ((error as NodeJS.ErrnoException | undefined)?.code !== 'EADDRINUSE')
    return `cursor-bridge: ${command} cannot listen on ${host}:${port}: ${reason}`;
  const configKey = command === 'serve' ? 'PORT' : 'mcpHost.port';
  const ccr3 =
    port >= ccr3Ports.first && port <= ccr3Ports.last && where.holder !== 'cursor-bridge'
      ? ` Claude Code Router 3 listens on ${ccr3Ports.first}–${ccr3Ports.last} (gateway, core, admin UI): with CCR 3 ` +
        `running, ${command === 'serve' ? 'use the cursor-bridge plugin inside it instead (cursor-bridge ccr install), or ' : ''}` +
        `pick a port outside that range, e.g. --port 3465.`
      : '';
  return (
    `cursor-bridge: ${command} cannot listen on ${host}:${port}: the port is already in use. ` +
    `Choose another with --port <n> (or ${configKey} in the config).${holderSentence(where.holder, port)}${ccr3}`
  );
};
