import type { z } from 'zod';

/**
 * A config file that cannot be used. The CLI prints {@link ConfigError.message} and exits with code 2;
 * the message already names the file, the field (or line/column) and what to do.
 */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  /** The config file path. */
  readonly file: string;
  /** The field at fault as a path (`Providers[0].transformer.use[0][1].cursorMode`); absent for syntax errors. */
  readonly field: string | undefined;
  /** 1-based position of a syntax error. */
  readonly line: number | undefined;
  readonly column: number | undefined;
  /** The bare reason, without file and field. */
  readonly reason: string;

  constructor(
    location: { file: string; field?: string; line?: number; column?: number },
    reason: string,
    options?: { cause?: unknown },
  ) {
    const where =
      location.line === undefined
        ? `${location.file}${location.field === undefined ? '' : `: ${location.field}`}`
        : `${location.file}:${location.line}:${location.column ?? 1}`;
    super(`${where}: ${reason}`, options);
    this.file = location.file;
    this.field = location.field;
    this.line = location.line;
    this.column = location.column;
    this.reason = reason;
  }
}

/** Formats a zod / property path as `Providers[0].transformer.use[0][1]`. */
export const formatFieldPath = (path: ReadonlyArray<PropertyKey>): string =>
  path.reduce<string>((text, segment) => {
    if (typeof segment === 'number') return `${text}[${segment}]`;
    const name = String(segment);
    return text === '' ? name : `${text}.${name}`;
  }, '');

/**
 * `schema`'s output for `value`, or a ConfigError for its first issue, in `location.file` at the field
 * `location.fieldPath` followed by the issue's own path (no field when both are empty); `fallback` is the
 * reason when zod gives none.
 * @throws ConfigError
 */
export const parseConfigValue = <Schema extends z.ZodType>(
  schema: Schema,
  value: unknown,
  location: { file: string; fieldPath?: ReadonlyArray<PropertyKey> },
  fallback = 'invalid config',
): z.output<Schema> => {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const field = formatFieldPath([...(location.fieldPath ?? []), ...(issue?.path ?? [])]);
  throw new ConfigError(
    { file: location.file, ...(field === '' ? {} : { field }) },
    issue?.message ?? fallback,
  );
};
