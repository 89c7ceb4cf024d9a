import { describeDepthExcess } from '../../../lib/json-depth.js';
import { InvalidRequestFault } from './invalid-request-fault.js';
import { JsonTooDeepError, safeParseJson } from './safe-parse-json.js';

/**
 * The arguments of a tool call from an earlier assistant turn, as `TurnToolCallPart.input`: the parsed JSON
 * value, or the text itself when it is not JSON (a custom tool's raw input, or arguments the model cut off).
 * An empty string is not JSON and stays `''`; adapters that read blank arguments as `{}` decide that first.
 * Arguments nested deeper than the bridge's JSON limit are a bad request: an {@link InvalidRequestFault} at
 * `path` (the field holding the text), naming where inside it the limit was crossed.
 */
export const convertToolCallInput = (text: string, path: string): unknown => {
  const parsed = safeParseJson(text);
  if (parsed.ok) return parsed.value;
  if (parsed.error instanceof JsonTooDeepError) {
    const { excess } = parsed.error;
    const inner = excess.path === '' ? '' : ` (at ${excess.path})`;
    throw InvalidRequestFault.atField(path, `${describeDepthExcess(excess)}${inner}`);
  }
  return text;
};
