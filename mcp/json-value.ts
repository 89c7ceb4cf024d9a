/** A JSON value, as parsed from the wire. Assignable to `@cursor/sdk`'s `SDKJsonValue`. */
export type JsonValue = string | number | boolean | null | JsonValue[] | JsonObject;

/** A JSON object. */
export type JsonObject = { [key: string]: JsonValue };
