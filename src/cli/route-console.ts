import { format } from 'node:util';
import type { Logger } from 'pino';

/** The bridge level each console method of the SDK lands at. */
const levels = { log: 'trace', info: 'trace', debug: 'trace', warn: 'debug', error: 'warn' } as const;

/**
 * `@cursor/sdk` logs through the global `console` (timestamped lines on stdout, e.g. "  INFO  LocalCursorRulesService
 * load completed"), which would interleave with the bridge's JSON log. While the server runs, console output
 * goes into the bridge's logger instead, as `component: "cursor-sdk"` lines below the bridge's own: its info
 * and debug chatter at `trace`, its warnings at `debug` (so `LOG_LEVEL=debug` shows the bridge's own debug
 * lines, not mostly the SDK's) and its errors at `warn` (every failure a client sees is logged by the bridge
 * itself). Returns a function restoring the console.
 */
export const routeConsoleToLogger = (logger: Logger): (() => void) => {
  const log = logger.child({ component: 'cursor-sdk' });
  const original = {
    log: console.log,
    info: console.info,
    debug: console.debug,
    warn: console.warn,
    error: console.error,
  };
  for (const method of Object.keys(levels) as Array<keyof typeof levels>) {
    const level = levels[method];
    console[method] = (...args: unknown[]): void => {
      if (log.isLevelEnabled(level)) log[level](format(...args));
    };
  }
  return () => Object.assign(console, original);
};
