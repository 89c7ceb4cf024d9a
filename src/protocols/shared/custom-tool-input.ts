import type { JsonSchema } from '../../turn/turn-request.js';
import { safeParseJson } from './safe-parse-json.js';

/**
 * The one rule for custom (free-form) tools such as Codex `apply_patch`: their input is one raw string,
 * carried wherever only a JSON object fits (the upstream tool mirror, an Anthropic `tool_use`) as
 * `{ input: <raw string> }`. The turn model itself always holds the raw string.
 */

/** The mirrored input schema of a custom tool: an object with the one string property `input`. */
export const createCustomToolInputSchema = (description: string): JsonSchema => ({
  type: 'object',
  properties: { input: { type: 'string', description } },
  required: ['input'],
});

/** The raw input in its object form, `{ input }`. */
export const wrapCustomToolInput = (input: string): { input: string } => ({ input });

/**
 * The raw input from text that may still be the object form: `{"input":"…"}` gives its string; anything
 * else (not JSON, or JSON of another shape) already is the raw input and is returned as it is.
 */
export const unwrapCustomToolInput = (input: string): string => {
  if (!input.trimStart().startsWith('{')) return input;
  const parsed = safeParseJson(input);
  if (!parsed.ok) return input;
  const { value } = parsed;
  return typeof value === 'object' && value !== null && 'input' in value && typeof value.input === 'string'
    ? value.input
    : input;
};
