import { safeParseJson } from './safe-parse-json.js';

/**
 * The arguments of a tool call from an earlier assistant turn, as `TurnToolCallPart.input`: the parsed JSON
 * value, or the text itself when it is not JSON (a custom tool's raw input, or arguments the model cut off).
 * An empty string is not JSON and stays `''`; adapters that read blank arguments as `{}` decide that first.
 */
export const convertToolCallInput = (text: string): unknown => {
  const parsed = safeParseJson(text);
  return parsed.ok ? parsed.value : text;
};
