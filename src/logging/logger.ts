import { pino, type DestinationStream, type Logger, type LevelWithSilent } from 'pino';
import { clipText } from '../../lib/clip-text.js';

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

/** The safety net's bounds: any string field, any array, and how deep fields are looked into. */
const maxFieldChars = 1_000;
const maxArrayItems = 50;
const maxFieldDepth = 8;

const isPlainObject = (value: unknown): value is Record<string, unknown> => {
  if (typeof value !== 'object' || value === null) return false;
  const prototype: unknown = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
};

/**
 * A log line's fields with every string cut at 1,000 characters and every array at 50 items (each cut
 * noted), copying only what it changes. The safety net for values that came from a client and were not
 * clipped where they were logged (those are cut at 200 there); Errors go to pino's serializer as they are.
 */
export const boundLogFields = (value: unknown, depth = 0): unknown => {
  if (typeof value === 'string') return clipText(value, maxFieldChars);
  if (depth >= maxFieldDepth) return value;
  if (Array.isArray(value)) {
    const items = value.length > maxArrayItems ? value.slice(0, maxArrayItems) : value;
    let changed = items !== value;
    const bounded = items.map((item: unknown) => {
      const next = boundLogFields(item, depth + 1);
      if (next !== item) changed = true;
      return next;
    });
    if (value.length > maxArrayItems) bounded.push(`…[+${value.length - maxArrayItems} items]`);
    return changed ? bounded : value;
  }
  if (!isPlainObject(value)) return value;
  let copy: Record<string, unknown> | undefined;
  for (const [key, field] of Object.entries(value)) {
    const next = boundLogFields(field, depth + 1);
    if (next !== field) (copy ??= { ...value })[key] = next;
  }
  return copy ?? value;
};

export type LoggerOptions = { level?: LevelWithSilent; destination?: DestinationStream };

/**
 * The one pino root. Everything else receives it (or a child) by injection. Every line's fields pass
 * {@link boundLogFields}: no client value makes a line as large as the request. (pino resets the bindings
 * formatter for children, so `child()` bindings are bound where they are made: only fixed-size values.)
 */
export const createLogger = (options: LoggerOptions = {}): Logger =>
  pino(
    {
      level: options.level ?? 'info',
      base: { name: 'cursor-bridge' },
      redact: { paths: redactPaths, censor: '[redacted]' },
      formatters: {
        log: (fields) => boundLogFields(fields) as Record<string, unknown>,
      },
    },
    options.destination,
  );
