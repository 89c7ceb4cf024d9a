/**
 * The one outcome shape of every parser and loader in the bridge (request parsers, `safeParseJson`,
 * the JSON5 parser, the config resolvers, the body reader): `ok` tells which branch, `value` is what was
 * produced, `error` says why nothing was. Expected failures are returned, never thrown.
 */
export type Result<Value, Failure> = { ok: true; value: Value } | { ok: false; error: Failure };
