import { pino, type DestinationStream, type Logger, type LevelWithSilent } from 'pino';

export type { Logger };

/** Paths whose values never reach a log line: credentials in headers, configs and SDK options. */
export const redactPaths = [
  'headers.authorization',
  'headers["x-api-key"]',
  'headers.cookie',
  'req.headers.authorization',
  'req.headers["x-api-key"]',
  'req.headers.cookie',
  'apiKey',
  'api_key',
  '*.apiKey',
  '*.api_key',
  'APIKEY',
  '*.APIKEY',
  'token',
  '*.token',
];

export type LoggerOptions = { level?: LevelWithSilent; destination?: DestinationStream };

/** The one pino root. Everything else receives it (or a child) by injection. */
export const createLogger = (options: LoggerOptions = {}): Logger =>
  pino(
    {
      level: options.level ?? 'info',
      base: { name: 'cursor-bridge' },
      redact: { paths: redactPaths, censor: '[redacted]' },
    },
    options.destination,
  );
