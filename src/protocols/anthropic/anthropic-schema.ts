/**
 * Loose zod schemas for the Anthropic Messages request: only the fields the bridge reads are validated,
 * unknown keys are kept. Content blocks and tools are validated one by one in `anthropic-to-turn.ts`, so an
 * unknown block or tool kind becomes a warning instead of a 400.
 * @see https://docs.anthropic.com/en/api/messages
 */

import { z } from 'zod';
import { userLocationSchema } from '../shared/read-user-location.js';
import { isRecord } from '../../../lib/is-record.js';

/** `string | block[]`; the blocks are checked individually by the converter. */
const contentSchema = z.union([z.string(), z.array(z.unknown())], {
  error: 'expected a string or an array of content blocks',
});

export const anthropicMessageSchema = z.looseObject({
  role: z.enum(['user', 'assistant', 'system']),
  content: contentSchema,
});
export type AnthropicMessage = z.infer<typeof anthropicMessageSchema>;

export const anthropicToolChoiceSchema = z.discriminatedUnion('type', [
  z.looseObject({ type: z.literal('auto') }),
  z.looseObject({ type: z.literal('any') }),
  z.looseObject({ type: z.literal('none') }),
  z.looseObject({ type: z.literal('tool'), name: z.string() }),
]);
export type AnthropicToolChoice = z.infer<typeof anthropicToolChoiceSchema>;

/** `enabled` (with `budget_tokens`), `adaptive` (with `display`), `disabled`; other types are tolerated. */
export const anthropicThinkingSchema = z.looseObject({
  type: z.string(),
  budget_tokens: z.number().int().nonnegative().optional(),
});

export const anthropicRequestSchema = z.looseObject({
  model: z.string(),
  system: z.union([z.string(), z.array(z.unknown())]).optional(),
  messages: z.array(anthropicMessageSchema),
  tools: z.array(z.unknown()).optional(),
  tool_choice: anthropicToolChoiceSchema.optional(),
  thinking: anthropicThinkingSchema.optional(),
  output_config: z.looseObject({ effort: z.string().nullish() }).nullish(),
  max_tokens: z.number().int().positive().optional(),
  stream: z.boolean().optional(),
  metadata: z.looseObject({ user_id: z.string().nullish() }).nullish(),
  stop_sequences: z.array(z.string()).nullish(),
});
export type AnthropicRequest = z.infer<typeof anthropicRequestSchema>;

const isOptionalInteger = (value: unknown, min: number): boolean =>
  value === undefined || (Number.isSafeInteger(value) && (value as number) >= min);

const messageRoles: ReadonlySet<unknown> = new Set(['user', 'assistant', 'system']);
const choiceTypes: ReadonlySet<unknown> = new Set(['auto', 'any', 'none']);

/**
 * True only when {@link anthropicRequestSchema} is sure to accept `body` (a parsed JSON body), checked by
 * hand: in a cold process that `safeParse` is costly even for a small request, and the schema returns a
 * copy with the same values, so a body that passes is used as it is. Keep it in step with the
 * schema: it may refuse what the schema accepts (the schema then decides), never accept more.
 */
export const isPlainAnthropicRequest = (body: unknown): body is AnthropicRequest => {
  if (!isRecord(body)) return false;
  const { model, system, messages, tools, tool_choice, thinking, output_config } = body;
  const { max_tokens, stream, metadata, stop_sequences } = body;
  if (typeof model !== 'string' || !Array.isArray(messages)) return false;
  if (system !== undefined && typeof system !== 'string' && !Array.isArray(system)) return false;
  for (const message of messages as unknown[]) {
    if (!isRecord(message) || !messageRoles.has(message['role'])) return false;
    if (typeof message['content'] !== 'string' && !Array.isArray(message['content'])) return false;
  }
  if (tools !== undefined && !Array.isArray(tools)) return false;
  if (tool_choice !== undefined) {
    if (!isRecord(tool_choice)) return false;
    const tool = tool_choice['type'] === 'tool' && typeof tool_choice['name'] === 'string';
    if (!tool && !choiceTypes.has(tool_choice['type'])) return false;
  }
  if (thinking !== undefined) {
    if (!isRecord(thinking) || typeof thinking['type'] !== 'string') return false;
    if (!isOptionalInteger(thinking['budget_tokens'], 0)) return false;
  }
  if (output_config != null) {
    if (!isRecord(output_config)) return false;
    if (output_config['effort'] != null && typeof output_config['effort'] !== 'string') return false;
  }
  if (!isOptionalInteger(max_tokens, 1)) return false;
  if (stream !== undefined && typeof stream !== 'boolean') return false;
  if (metadata != null) {
    if (!isRecord(metadata)) return false;
    if (metadata['user_id'] != null && typeof metadata['user_id'] !== 'string') return false;
  }
  if (stop_sequences != null) {
    if (!Array.isArray(stop_sequences)) return false;
    if (!stop_sequences.every((sequence) => typeof sequence === 'string')) return false;
  }
  return true;
};

/** Every content block has a string `type`; the rest depends on it. */
export const anthropicBlockHeadSchema = z.looseObject({ type: z.string() });

export const anthropicTextBlockSchema = z.looseObject({ type: z.literal('text'), text: z.string() });

export const anthropicImageBlockSchema = z.looseObject({
  type: z.literal('image'),
  source: z.looseObject({ type: z.string() }),
});

export const anthropicBase64SourceSchema = z.looseObject({
  type: z.literal('base64'),
  media_type: z.string(),
  data: z.string(),
});

export const anthropicUrlSourceSchema = z.looseObject({ type: z.literal('url'), url: z.string() });

export const anthropicToolUseBlockSchema = z.looseObject({
  type: z.literal('tool_use'),
  id: z.string(),
  name: z.string(),
  input: z.unknown(),
});

export const anthropicToolResultBlockSchema = z.looseObject({
  type: z.literal('tool_result'),
  tool_use_id: z.string(),
  content: contentSchema.optional(),
  is_error: z.boolean().nullish(),
});

export const anthropicThinkingBlockSchema = z.looseObject({
  type: z.literal('thinking'),
  thinking: z.string(),
  signature: z.string().nullish(),
});

/** Claude Code's ToolSearch answers with these inside a tool_result. */
export const anthropicToolReferenceBlockSchema = z.looseObject({
  type: z.literal('tool_reference'),
  tool_name: z.string(),
});

/** A client-hosted tool: `{name, description?, input_schema}` (`type` absent or `custom`). */
export const anthropicFunctionToolSchema = z.looseObject({
  name: z.string(),
  description: z.string().optional(),
  input_schema: z.record(z.string(), z.unknown()),
  type: z.literal('custom').nullish(),
});

/**
 * Anthropic's hosted web search (`web_search_20250305`, `web_search_20260209`, …): run by the server.
 * Domain lists, `max_uses` and `user_location` are read; anything else is kept and ignored.
 */
export const anthropicWebSearchToolSchema = z.looseObject({
  type: z.string().startsWith('web_search_'),
  name: z.string(),
  allowed_domains: z.array(z.string()).nullish(),
  blocked_domains: z.array(z.string()).nullish(),
  max_uses: z.number().int().positive().nullish(),
  user_location: userLocationSchema.nullish(),
});

/** A `server_tool_use` block of an earlier answer (a hosted search the server ran). */
export const anthropicServerToolUseBlockSchema = z.looseObject({
  type: z.literal('server_tool_use'),
  id: z.string(),
  name: z.string(),
  input: z.unknown(),
});

/** A `web_search_tool_result` block of an earlier answer: the sources, or an error object. */
export const anthropicWebSearchToolResultBlockSchema = z.looseObject({
  type: z.literal('web_search_tool_result'),
  tool_use_id: z.string(),
  content: z.union([
    z.array(
      z.looseObject({
        url: z.string(),
        title: z.string().nullish(),
        encrypted_content: z.string().nullish(),
      }),
    ),
    z.looseObject({ error_code: z.string() }),
  ]),
});

/** True only when {@link anthropicToolUseBlockSchema} is sure to accept `block` (see {@link isPlainAnthropicRequest}). */
export const isPlainToolUseBlock = (block: unknown): block is z.infer<typeof anthropicToolUseBlockSchema> =>
  isRecord(block) &&
  block['type'] === 'tool_use' &&
  typeof block['id'] === 'string' &&
  typeof block['name'] === 'string' &&
  // zod requires the key of a z.unknown() field, though not its value.
  'input' in block;

/** True only when {@link anthropicToolResultBlockSchema} is sure to accept `block`. */
export const isPlainToolResultBlock = (
  block: unknown,
): block is z.infer<typeof anthropicToolResultBlockSchema> => {
  if (!isRecord(block) || block['type'] !== 'tool_result') return false;
  if (typeof block['tool_use_id'] !== 'string') return false;
  const { content, is_error } = block;
  if (content !== undefined && typeof content !== 'string' && !Array.isArray(content)) return false;
  return is_error == null || typeof is_error === 'boolean';
};

/** True only when {@link anthropicFunctionToolSchema} is sure to accept `tool`. */
export const isPlainFunctionTool = (tool: unknown): tool is z.infer<typeof anthropicFunctionToolSchema> => {
  if (!isRecord(tool) || typeof tool['name'] !== 'string' || !isRecord(tool['input_schema'])) return false;
  const { description, type } = tool;
  return (
    (description === undefined || typeof description === 'string') && (type == null || type === 'custom')
  );
};
