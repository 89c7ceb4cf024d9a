import { z } from 'zod';
import type {
  TurnAssistantPart,
  TurnIdentityHints,
  TurnMessage,
  TurnReasoning,
  TurnTextPart,
  TurnTool,
  TurnToolChoice,
  TurnUserPart,
  TurnWebSearch,
} from '../../turn/turn-request.js';
import type { ParseResult } from '../protocol-adapter.js';
import {
  openaiChatAssistantMessageSchema,
  openaiChatCustomToolCallSchema,
  openaiChatFunctionToolCallSchema,
  openaiChatFunctionToolSchema,
  openaiChatImageUrlPartSchema,
  openaiChatRefusalPartSchema,
  openaiChatRequestSchema,
  openaiChatSystemMessageSchema,
  openaiChatTextPartSchema,
  openaiChatToolChoiceSchema,
  openaiChatToolMessageSchema,
  openaiChatToolSchema,
  openaiChatUserMessageSchema,
  type OpenaiChatContent,
  type OpenaiChatRequest,
} from './openai-chat-schema.js';
import { warn, type BaseConversionState } from '../shared/conversion-state.js';
import { readUserLocation, userLocationSchema } from '../shared/read-user-location.js';
import { convertTextOrParts } from '../shared/convert-text-or-parts.js';
import { convertToolCallInput } from '../shared/convert-tool-call-input.js';
import { createRequestFieldReader } from '../shared/create-request-field-reader.js';
import { createToolResultMessage } from '../shared/create-tool-result-message.js';
import { describeSchemaIssue } from '../shared/describe-schema-issue.js';
import { findSessionHeader } from '../shared/find-session-header.js';
import { catchInvalidRequest } from '../shared/invalid-request-fault.js';
import { dataUrlBase64, parseDataUrl } from '../shared/parse-data-url.js';
import { readReasoningEffort } from '../shared/read-reasoning-effort.js';
import { resolveTurnReasoning } from '../shared/resolve-turn-reasoning.js';
import { sanitizeHeaders } from '../shared/sanitize-headers.js';

/** A failed union names the alternative that got furthest (`messages.0.content.0.image_url.url`). */
const parseAt = createRequestFieldReader('deepest-alternative');

/** Parameters we accept but cannot honour upstream; reported as warnings, never rejected. */
const ignoredFields = [
  'temperature',
  'top_p',
  'stop',
  'response_format',
  'logprobs',
  'top_logprobs',
  'seed',
  'presence_penalty',
  'frequency_penalty',
  'logit_bias',
  'functions',
  'function_call',
  'audio',
  'modalities',
  'prediction',
  'verbosity',
] as const;

const emptyInputSchema = (): Record<string, unknown> => ({ type: 'object', properties: {} });

type ConversionState = BaseConversionState & {
  /** Tool names by call id, from earlier assistant `tool_calls`. */
  toolNames: Map<string, string>;
};

const convertImageUrl = (url: string): TurnUserPart => {
  const dataUrl = parseDataUrl(url);
  if (dataUrl) {
    const mediaType = dataUrl.mediaType || 'application/octet-stream';
    return { type: 'image', source: { kind: 'base64', mediaType, data: dataUrlBase64(dataUrl) } };
  }
  // http(s) is fetched by the bridge; any other scheme becomes a note to the model there.
  return { type: 'image', source: { kind: 'url', url } };
};

/** Text-only content (system/developer). Non-text parts are dropped with a warning; empty text is skipped. */
const convertTextContent = (
  content: OpenaiChatContent,
  path: string,
  state: ConversionState,
): TurnTextPart[] =>
  content === ''
    ? []
    : convertTextOrParts(content, (part, index): TurnTextPart | undefined => {
        const partPath = `${path}.${index}`;
        if (part.type === 'text') {
          const { text } = parseAt(openaiChatTextPartSchema, part, partPath);
          return text === '' ? undefined : { type: 'text', text };
        }
        warn(state, 'unsupported-content', `${partPath}: content part type "${part.type}" dropped`);
        return undefined;
      });

/** User and tool-result content: text and images (data URL → base64, http(s) → url). */
const convertUserContent = (
  content: OpenaiChatContent,
  path: string,
  state: ConversionState,
): TurnUserPart[] =>
  convertTextOrParts(content, (part, index): TurnUserPart | undefined => {
    const partPath = `${path}.${index}`;
    if (part.type === 'text') {
      return { type: 'text', text: parseAt(openaiChatTextPartSchema, part, partPath).text };
    }
    if (part.type === 'image_url') {
      const { image_url: image } = parseAt(openaiChatImageUrlPartSchema, part, partPath);
      return convertImageUrl(typeof image === 'string' ? image : image.url);
    }
    warn(state, 'unsupported-content', `${partPath}: content part type "${part.type}" dropped`);
    return undefined;
  });

const convertToolCallArguments = (
  value: string | Record<string, unknown> | null | undefined,
  path: string,
): unknown => {
  if (value === null || value === undefined) return {};
  if (typeof value !== 'string') return value;
  if (value.trim() === '') return {};
  return convertToolCallInput(value, path);
};

const convertAssistantMessage = (
  message: unknown,
  path: string,
  state: ConversionState,
): TurnAssistantPart[] => {
  const assistant = parseAt(openaiChatAssistantMessageSchema, message, path);
  const parts: TurnAssistantPart[] = [];
  if (assistant.reasoning_content) parts.push({ type: 'reasoning', text: assistant.reasoning_content });
  const content = assistant.content ?? '';
  if (content !== '') {
    const textParts = convertTextOrParts(content, (part, index): TurnTextPart | undefined => {
      const partPath = `${path}.content.${index}`;
      if (part.type === 'text') {
        const { text } = parseAt(openaiChatTextPartSchema, part, partPath);
        return text === '' ? undefined : { type: 'text', text };
      }
      if (part.type === 'refusal') {
        return { type: 'text', text: parseAt(openaiChatRefusalPartSchema, part, partPath).refusal };
      }
      warn(state, 'unsupported-content', `${partPath}: content part type "${part.type}" dropped`);
      return undefined;
    });
    parts.push(...textParts);
  }
  if (assistant.refusal && !parts.some((part) => part.type === 'text')) {
    parts.push({ type: 'text', text: assistant.refusal });
  }
  (assistant.tool_calls ?? []).forEach((call, index) => {
    const callPath = `${path}.tool_calls.${index}`;
    if (call.type === 'custom') {
      const { id, custom } = parseAt(openaiChatCustomToolCallSchema, call, callPath);
      state.toolNames.set(id, custom.name);
      parts.push({ type: 'tool-call', toolCallId: id, toolName: custom.name, input: custom.input });
      return;
    }
    const { id, function: fn } = parseAt(openaiChatFunctionToolCallSchema, call, callPath);
    state.toolNames.set(id, fn.name);
    parts.push({
      type: 'tool-call',
      toolCallId: id,
      toolName: fn.name,
      input: convertToolCallArguments(fn.arguments, `${callPath}.function.arguments`),
    });
  });
  return parts;
};

/**
 * The leading run of system/developer messages becomes `system`; later ones stay in the transcript as
 * role `system` entries. Tool results keep their position and learn their tool name from the call.
 */
const convertMessages = (
  messages: OpenaiChatRequest['messages'],
  state: ConversionState,
): { system: TurnTextPart[]; messages: TurnMessage[] } => {
  const system: TurnTextPart[] = [];
  const converted: TurnMessage[] = [];
  let leading = true;
  messages.forEach((message, index) => {
    const path = `messages.${index}`;
    const isSystem = message.role === 'system' || message.role === 'developer';
    if (!isSystem) leading = false;
    switch (message.role) {
      case 'system':
      case 'developer': {
        const { content } = parseAt(openaiChatSystemMessageSchema, message, path);
        const parts = convertTextContent(content, `${path}.content`, state);
        if (leading) system.push(...parts);
        else if (parts.length > 0) converted.push({ role: 'system', content: parts });
        return;
      }
      case 'user': {
        const { content } = parseAt(openaiChatUserMessageSchema, message, path);
        const parts = convertUserContent(content, `${path}.content`, state);
        if (parts.length > 0) converted.push({ role: 'user', content: parts });
        return;
      }
      case 'assistant': {
        const parts = convertAssistantMessage(message, path, state);
        if (parts.length > 0) converted.push({ role: 'assistant', content: parts });
        return;
      }
      case 'tool': {
        const tool = parseAt(openaiChatToolMessageSchema, message, path);
        const content = convertUserContent(tool.content, `${path}.content`, state);
        converted.push(
          createToolResultMessage(tool.tool_call_id, content, {
            toolName: state.toolNames.get(tool.tool_call_id),
          }),
        );
        return;
      }
      default:
        warn(
          state,
          'unsupported-content',
          `${path}: message role "${message.role}" is not supported; dropped`,
        );
    }
  });
  return { system, messages: converted };
};

const convertTools = (tools: readonly unknown[], state: ConversionState): TurnTool[] => {
  const converted: TurnTool[] = [];
  tools.forEach((tool, index) => {
    const path = `tools.${index}`;
    const entry = openaiChatToolSchema.safeParse(tool);
    if (!entry.success) {
      warn(state, 'unsupported-tool', `${path}: not a tool object; dropped`);
      return;
    }
    if (entry.data.type !== 'function') {
      warn(state, 'unsupported-tool', `${path}: tool type "${entry.data.type}" is not supported; dropped`);
      return;
    }
    const parsed = openaiChatFunctionToolSchema.safeParse(tool);
    if (!parsed.success) {
      const issue = describeSchemaIssue(parsed.error, [path], 'deepest-alternative');
      warn(state, 'unsupported-tool', `${issue.path}: ${issue.message}; tool dropped`);
      return;
    }
    const { name, description, parameters } = parsed.data.function;
    converted.push({
      kind: 'function',
      name,
      ...(typeof description === 'string' ? { description } : {}),
      inputSchema: parameters ?? emptyInputSchema(),
    });
  });
  return converted;
};

const convertToolChoice = (value: unknown, state: ConversionState): TurnToolChoice => {
  if (value === undefined || value === null) return { type: 'auto' };
  const parsed = openaiChatToolChoiceSchema.safeParse(value);
  if (!parsed.success) {
    warn(state, 'unsupported-field', 'tool_choice: unsupported value; using "auto"');
    return { type: 'auto' };
  }
  const choice = parsed.data;
  if (typeof choice === 'string') return { type: choice };
  return { type: 'tool', name: choice.function.name };
};

/**
 * `reasoning_effort` and the `reasoning` object (OpenRouter style, also CCR's unified body), through the
 * one rule of every protocol ({@link resolveTurnReasoning}). `reasoning_effort` wins over
 * `reasoning.effort`; both are checked. `reasoning.enabled: false` turns reasoning off; any other
 * `reasoning` object without an effort (`{}`, `{enabled: true}`) asks for reasoning without an effort.
 */
const convertReasoning = (request: OpenaiChatRequest): TurnReasoning => {
  const reasoning = request.reasoning ?? undefined;
  const nested = readReasoningEffort(reasoning?.effort, 'reasoning.effort');
  return resolveTurnReasoning({
    effort: readReasoningEffort(request.reasoning_effort, 'reasoning_effort') ?? nested,
    setting: reasoning === undefined ? 'absent' : reasoning.enabled === false ? 'off' : 'on',
  });
};

const nonEmpty = (value: string | null | undefined): string | undefined =>
  typeof value === 'string' && value.trim() !== '' ? value : undefined;

const convertIdentity = (request: OpenaiChatRequest, headers: Record<string, string>): TurnIdentityHints => {
  const identity: TurnIdentityHints = {};
  const { conversation } = request;
  const conversationId =
    nonEmpty(typeof conversation === 'object' ? conversation?.id : conversation) ??
    nonEmpty(request.conversation_id);
  const nativeSessionId =
    findSessionHeader(headers) ??
    (conversationId === undefined ? undefined : { value: conversationId, source: 'conversation' });
  if (nativeSessionId !== undefined) identity.nativeSessionId = nativeSessionId;
  const promptCacheKey = nonEmpty(request.prompt_cache_key);
  if (promptCacheKey !== undefined) identity.promptCacheKey = promptCacheKey;
  return identity;
};

const webSearchOptionsSchema = z.looseObject({
  user_location: z.looseObject({ approximate: userLocationSchema.nullish() }).nullish(),
});

/**
 * `web_search_options` turns hosted web search on for the request (Cursor runs it; its sources come back
 * as `url_citation` annotations); its user location is a hint for the model, its context size has no
 * Cursor counterpart.
 */
const convertWebSearchOptions = (value: unknown): TurnWebSearch | undefined => {
  if (value === undefined || value === null) return undefined;
  const options = parseAt(webSearchOptionsSchema, value, 'web_search_options');
  const userLocation = readUserLocation(options.user_location?.approximate);
  return { name: 'web_search', ...(userLocation === undefined ? {} : { userLocation }) };
};

const warnIgnoredFields = (body: Record<string, unknown>, state: ConversionState): void => {
  for (const field of ignoredFields) {
    if (body[field] !== undefined && body[field] !== null) {
      warn(state, 'unsupported-field', `${field}: not supported by the upstream; ignored`);
    }
  }
  if (typeof body['n'] === 'number' && body['n'] !== 1) {
    warn(state, 'unsupported-field', 'n: only one choice is produced; ignored');
  }
};

/**
 * Converts a Chat Completions body (already `JSON.parse`d) and its headers into a {@link TurnRequest}.
 * Unknown fields, roles, content parts and tool kinds never fail the request: they are dropped with a
 * warning. A field we read with the wrong shape fails with an `invalid-request` error whose
 * `param` is the dot path of the field (e.g. `messages.2.content`).
 */
export const convertOpenaiChatRequestToTurn = (body: unknown, headers: Record<string, string>): ParseResult =>
  catchInvalidRequest(() => {
    const request = parseAt(openaiChatRequestSchema, body, '');
    const state: ConversionState = { warnings: [], toolNames: new Map() };
    const cleanHeaders = sanitizeHeaders(headers);
    const tools = convertTools(request.tools ?? [], state);
    const { system, messages } = convertMessages(request.messages, state);
    warnIgnoredFields(request, state);
    const maxOutputTokens = request.max_completion_tokens ?? request.max_tokens;
    const webSearch = convertWebSearchOptions((body as Record<string, unknown>)['web_search_options']);
    return {
      protocol: 'openai-chat',
      model: request.model,
      system,
      messages,
      tools,
      ...(webSearch === undefined ? {} : { webSearch }),
      toolChoice: convertToolChoice(request.tool_choice, state),
      reasoning: convertReasoning(request),
      ...(maxOutputTokens === undefined || maxOutputTokens === null ? {} : { maxOutputTokens }),
      stream: request.stream ?? false,
      includeStreamUsage: request.stream_options?.include_usage ?? false,
      identity: convertIdentity(request, cleanHeaders),
      headers: cleanHeaders,
      warnings: state.warnings,
    };
  });
