import { format } from 'node:util';
import type { Logger } from 'pino';

/**
 * `@cursor/sdk` logs through the global `console` (timestamped INFO lines on stdout, e.g. "LocalCursorRulesService
 * load completed"), which would interleave with the bridge's JSON log. While the server runs, console output
 * goes into the bridge's logger instead: the SDK's info and debug chatter at debug level, its warnings and
 * errors at theirs. Returns a function restoring the console.
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
  const to =
    (level: 'debug' | 'warn' | 'error') =>
    (...args: unknown[]): void =>
      log[level](format(...args));
  console.log = to('debug');
  console.info = to('debug');
  console.debug = to('debug');
  console.warn = to('warn');
  console.error = to('error');
  return () => Object.assign(console, original);
};
