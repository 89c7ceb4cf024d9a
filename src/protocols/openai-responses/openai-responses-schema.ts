/**
 * Loose zod schemas for the parts of an OpenAI Responses request (`POST /v1/responses`) the bridge uses.
 * Unknown keys are kept; unknown input item, content part and tool types are validated only for a string
 * `type` and become warnings in the converter, never 400s.
 *
 * @see https://platform.openai.com/docs/api-reference/responses/create
 */

import { z } from 'zod';

/** Any typed object; the converter dispatches on `type` and validates the specific shape. */
export const openaiResponsesTypedObjectSchema = z.looseObject({ type: z.string() });

export const openaiResponsesRequestSchema = z.looseObject({
  model: z.string(),
  instructions: z.string().nullish(),
  /** A plain string is one user message; otherwise the list of input items (validated item by item). */
  input: z.union([z.string(), z.array(z.unknown())]),
  tools: z.array(z.unknown()).nullish(),
  tool_choice: z
    .union([z.string(), z.looseObject({ type: z.string(), name: z.string().optional() })])
    .nullish(),
  reasoning: z.looseObject({ effort: z.string().nullish(), summary: z.string().nullish() }).nullish(),
  max_output_tokens: z.number().int().positive().nullish(),
  stream: z.boolean().nullish(),
  prompt_cache_key: z.string().nullish(),
  parallel_tool_calls: z.boolean().nullish(),
  previous_response_id: z.string().nullish(),
  conversation: z.unknown().optional(),
});
export type OpenaiResponsesRequest = z.infer<typeof openaiResponsesRequestSchema>;

/** The item discriminator; a message may omit `type` (the SDK's `EasyInputMessage`, sent by @ai-sdk/openai). */
export const openaiResponsesItemSchema = z.looseObject({ type: z.string().optional() });

export const openaiResponsesMessageItemSchema = z.looseObject({
  role: z.enum(['user', 'assistant', 'system', 'developer']),
  content: z.union([z.string(), z.array(openaiResponsesTypedObjectSchema)]),
});
export type OpenaiResponsesMessageItem = z.infer<typeof openaiResponsesMessageItemSchema>;

export const openaiResponsesTextPartSchema = z.looseObject({ text: z.string() });

export const openaiResponsesRefusalPartSchema = z.looseObject({ refusal: z.string() });

export const openaiResponsesImagePartSchema = z.looseObject({
  image_url: z.string().nullish(),
  file_id: z.string().nullish(),
});

/** A call; `namespace` is set for a tool of a `namespace` tool (Codex), whose `name` is then the bare one. */
export const openaiResponsesFunctionCallItemSchema = z.looseObject({
  call_id: z.string(),
  name: z.string(),
  namespace: z.string().nullish(),
  arguments: z.string(),
});

export const openaiResponsesCustomToolCallItemSchema = z.looseObject({
  call_id: z.string(),
  name: z.string(),
  namespace: z.string().nullish(),
  input: z.string(),
});

/** Codex's `additional_tools` input item: tools offered from inside `input` (no top-level `tools`). */
export const openaiResponsesAdditionalToolsItemSchema = z.looseObject({ tools: z.array(z.unknown()) });

/** A client-executed tool search the model made (`tool_search_call`); `arguments` is an object. */
export const openaiResponsesToolSearchCallItemSchema = z.looseObject({
  call_id: z.string(),
  arguments: z.unknown(),
});

/** The client's answer to a `tool_search_call`: the tools it loaded, as tool definitions. */
export const openaiResponsesToolSearchOutputItemSchema = z.looseObject({
  call_id: z.string(),
  tools: z.array(z.unknown()).nullish(),
});

/** `function_call_output` and `custom_tool_call_output`. */
export const openaiResponsesToolOutputItemSchema = z.looseObject({
  call_id: z.string(),
  output: z.union([z.string(), z.array(openaiResponsesTypedObjectSchema)]),
});
export type OpenaiResponsesToolOutputItem = z.infer<typeof openaiResponsesToolOutputItemSchema>;

export const openaiResponsesReasoningItemSchema = z.looseObject({
  summary: z.array(z.looseObject({ type: z.string(), text: z.string() })).nullish(),
  content: z.array(z.looseObject({ type: z.string(), text: z.string().optional() })).nullish(),
  encrypted_content: z.string().nullish(),
});

export const openaiResponsesFunctionToolSchema = z.looseObject({
  name: z.string(),
  description: z.string().nullish(),
  parameters: z.record(z.string(), z.unknown()).nullish(),
});

/** A group of tools (Codex); each is called with `namespace` = the group's name and its own bare `name`. */
export const openaiResponsesNamespaceToolSchema = z.looseObject({
  name: z.string(),
  description: z.string().nullish(),
  tools: z.array(z.unknown()),
});

/** Tool search; only `execution: "client"` (the client searches and answers) can be mirrored. */
export const openaiResponsesToolSearchToolSchema = z.looseObject({
  execution: z.string().nullish(),
  description: z.string().nullish(),
  parameters: z.record(z.string(), z.unknown()).nullish(),
});

export const openaiResponsesCustomToolSchema = z.looseObject({
  name: z.string(),
  description: z.string().nullish(),
  format: z
    .looseObject({ type: z.string(), syntax: z.string().optional(), definition: z.string().optional() })
    .nullish(),
});
export type OpenaiResponsesCustomTool = z.infer<typeof openaiResponsesCustomToolSchema>;

const optionalText = z.string().nullish();

/**
 * OpenAI's hosted web search tool (`web_search`, `web_search_preview`, …). `external_web_access: false`
 * (Codex's default "cached" mode) searches OpenAI's cached index; absent or `true` searches the live web.
 * `search_context_size`, `search_content_types` and the like are kept but not read.
 */
export const openaiResponsesWebSearchToolSchema = z.looseObject({
  external_web_access: z.boolean().nullish(),
  filters: z.looseObject({ allowed_domains: z.array(z.string()).nullish() }).nullish(),
  user_location: z
    .looseObject({ city: optionalText, region: optionalText, country: optionalText, timezone: optionalText })
    .nullish(),
});
export type OpenaiResponsesWebSearchTool = z.infer<typeof openaiResponsesWebSearchToolSchema>;

/** A field of an earlier `web_search_call` item: read when it has the expected type, else ignored. */
const lenient = <T extends z.ZodType>(schema: T) => schema.nullish().catch(undefined);

/**
 * An earlier hosted web search (`web_search_call`), sent back as history. Every field is optional and
 * read leniently (a wrong type is ignored, never a 400): the item only tells the model a search happened.
 * `action` is `search` (`query` and/or `queries`), `open_page` or `find_in_page` (`url`), or `other`.
 */
export const openaiResponsesWebSearchCallItemSchema = z.looseObject({
  id: lenient(z.string()),
  status: lenient(z.string()),
  action: lenient(
    z.looseObject({
      type: z.string().catch('other'),
      query: lenient(z.string()),
      queries: lenient(z.array(z.string())),
      url: lenient(z.string()),
      sources: lenient(z.array(z.looseObject({ url: z.string() }))),
    }),
  ),
});
export type OpenaiResponsesWebSearchCallItem = z.infer<typeof openaiResponsesWebSearchCallItemSchema>;
