/**
 * Loose zod schemas for the parts of an OpenAI Chat Completions request the bridge reads. Unknown keys are
 * kept, unknown message roles / content parts / tool types pass the outer schema and are judged (kept,
 * converted or dropped with a warning) by `openai-chat-to-turn.ts`, which parses them with the narrower
 * schemas below so an error can name the exact field (`messages.2.content.0.text`).
 *
 * @see https://platform.openai.com/docs/api-reference/chat/create
 */

import { z } from 'zod';

/** Content is a string or an array of typed parts; each part is judged by its `type`. */
export const openaiChatContentPartSchema = z.looseObject({ type: z.string() });

export const openaiChatContentSchema = z.union([z.string(), z.array(openaiChatContentPartSchema)]);

export const openaiChatTextPartSchema = z.looseObject({ type: z.literal('text'), text: z.string() });

export const openaiChatRefusalPartSchema = z.looseObject({ type: z.literal('refusal'), refusal: z.string() });

/** `image_url` is `{ url, detail? }`; a few clients send the bare URL string. */
export const openaiChatImageUrlPartSchema = z.looseObject({
  type: z.literal('image_url'),
  image_url: z.union([z.string(), z.looseObject({ url: z.string() })]),
});

export const openaiChatSystemMessageSchema = z.looseObject({
  role: z.enum(['system', 'developer']),
  content: openaiChatContentSchema,
});

export const openaiChatUserMessageSchema = z.looseObject({
  role: z.literal('user'),
  content: openaiChatContentSchema,
});

/** A tool call in assistant history; its `type` decides which of the two shapes below applies. */
export const openaiChatToolCallSchema = z.looseObject({ id: z.string(), type: z.string().optional() });

/** `arguments` is JSON text on the wire; some clients send the object itself. */
export const openaiChatFunctionToolCallSchema = z.looseObject({
  id: z.string(),
  function: z.looseObject({
    name: z.string(),
    arguments: z.union([z.string(), z.record(z.string(), z.unknown())]).nullish(),
  }),
});

export const openaiChatCustomToolCallSchema = z.looseObject({
  id: z.string(),
  type: z.literal('custom'),
  custom: z.looseObject({ name: z.string(), input: z.string() }),
});

/** Assistant `content` may be `""` or `null` when `tool_calls` carry the turn (OpenCode sends `""`). */
export const openaiChatAssistantMessageSchema = z.looseObject({
  role: z.literal('assistant'),
  content: openaiChatContentSchema.nullish(),
  reasoning_content: z.string().nullish(),
  refusal: z.string().nullish(),
  tool_calls: z.array(openaiChatToolCallSchema).nullish(),
});

export const openaiChatToolMessageSchema = z.looseObject({
  role: z.literal('tool'),
  tool_call_id: z.string(),
  content: openaiChatContentSchema,
});

/** A tool entry; its `type` decides whether it is kept (`function`) or dropped with a warning. */
export const openaiChatToolSchema = z.looseObject({ type: z.string() });

export const openaiChatFunctionToolSchema = z.looseObject({
  type: z.literal('function'),
  function: z.looseObject({
    name: z.string().min(1),
    description: z.string().nullish(),
    parameters: z.record(z.string(), z.unknown()).nullish(),
  }),
});

export const openaiChatToolChoiceSchema = z.union([
  z.enum(['auto', 'none', 'required']),
  z.looseObject({ type: z.literal('function'), function: z.looseObject({ name: z.string() }) }),
]);

const tokenLimitSchema = z.int().positive().nullish();

/** The request envelope. Messages are only checked for a string `role` here; see the per-role schemas. */
export const openaiChatRequestSchema = z.looseObject({
  model: z.string(),
  messages: z.array(z.looseObject({ role: z.string() })).min(1),
  tools: z.array(z.unknown()).nullish(),
  tool_choice: z.unknown().optional(),
  reasoning_effort: z.string().nullish(),
  reasoning: z.looseObject({ effort: z.string().nullish(), enabled: z.boolean().nullish() }).nullish(),
  max_tokens: tokenLimitSchema,
  max_completion_tokens: tokenLimitSchema,
  stream: z.boolean().nullish(),
  stream_options: z.looseObject({ include_usage: z.boolean().nullish() }).nullish(),
  prompt_cache_key: z.string().nullish(),
  conversation: z.union([z.string(), z.looseObject({ id: z.string() })]).nullish(),
  conversation_id: z.string().nullish(),
});

export type OpenaiChatContent = z.infer<typeof openaiChatContentSchema>;
export type OpenaiChatContentPart = z.infer<typeof openaiChatContentPartSchema>;
export type OpenaiChatRequest = z.infer<typeof openaiChatRequestSchema>;
