import type { z } from 'zod';
import type { ParseResult } from '../protocol-adapter.js';
import type {
  TurnAssistantPart,
  TurnIdentityHints,
  TurnImagePart,
  TurnMessage,
  TurnReasoning,
  TurnRequest,
  TurnTextPart,
  TurnTool,
  TurnToolChoice,
  TurnUserPart,
  TurnWarning,
} from '../../turn/turn-request.js';
import {
  openaiResponsesCustomToolCallItemSchema,
  openaiResponsesCustomToolSchema,
  openaiResponsesFunctionCallItemSchema,
  openaiResponsesFunctionToolSchema,
  openaiResponsesImagePartSchema,
  openaiResponsesItemSchema,
  openaiResponsesMessageItemSchema,
  openaiResponsesReasoningItemSchema,
  openaiResponsesRefusalPartSchema,
  openaiResponsesRequestSchema,
  openaiResponsesTextPartSchema,
  openaiResponsesToolOutputItemSchema,
  openaiResponsesTypedObjectSchema,
} from './openai-responses-schema.js';
import type { OpenaiResponsesCustomTool, OpenaiResponsesRequest } from './openai-responses-schema.js';
import { warn, type BaseConversionState } from '../shared/conversion-state.js';
import { convertTextOrParts } from '../shared/convert-text-or-parts.js';
import { createCustomToolInputSchema } from '../shared/custom-tool-input.js';
import { convertToolCallInput } from '../shared/convert-tool-call-input.js';
import { createRequestFieldReader } from '../shared/create-request-field-reader.js';
import { createToolResultMessage } from '../shared/create-tool-result-message.js';
import { findSessionHeader } from '../shared/find-session-header.js';
import { catchInvalidRequest, InvalidRequestFault } from '../shared/invalid-request-fault.js';
import { parseDataUrl } from '../shared/parse-data-url.js';
import { readReasoningEffort } from '../shared/read-reasoning-effort.js';
import { sanitizeHeaders } from '../shared/sanitize-headers.js';

type Path = readonly (string | number)[];

type ConversionState = BaseConversionState & {
  system: TurnTextPart[];
  messages: TurnMessage[];
  /** Tool names by call id, from earlier `function_call` / `custom_tool_call` items. */
  toolNames: Map<string, string>;
  /** True once a non-system item was seen: later system/developer messages stay in the transcript. */
  conversationStarted: boolean;
};

/**
 * Convert an OpenAI Responses request body and its headers into a {@link TurnRequest}.
 * Unsupported but harmless inputs (hosted tools, unknown item types, file references) become warnings.
 * A bad shape, `conversation` or `previous_response_id` (nothing is stored server-side) is an
 * `invalid-request` error whose `param` names the field path, e.g. `input.2.content`.
 */
export const convertOpenaiResponsesRequestToTurn = (
  body: unknown,
  headers: Record<string, string>,
): ParseResult => catchInvalidRequest(() => convertRequest(body, headers));

const convertRequest = (body: unknown, headers: Record<string, string>): TurnRequest => {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new InvalidRequestFault(undefined, 'Invalid request: the body must be a JSON object.');
  }
  rejectServerSideState(body as Record<string, unknown>);
  const request = parseAt(openaiResponsesRequestSchema, body, []);
  const state: ConversionState = {
    system: request.instructions ? [{ type: 'text', text: request.instructions }] : [],
    messages: [],
    warnings: [],
    toolNames: new Map(),
    conversationStarted: false,
  };
  if (typeof request.input === 'string') {
    state.messages.push({ role: 'user', content: [{ type: 'text', text: request.input }] });
  } else {
    request.input.forEach((item, index) => convertItem(item, ['input', index], state));
  }
  const cleanHeaders = sanitizeHeaders(headers);
  return {
    protocol: 'openai-responses',
    model: request.model,
    system: state.system,
    messages: state.messages,
    tools: convertTools(request.tools ?? [], state),
    toolChoice: convertToolChoice(request.tool_choice, state),
    reasoning: convertReasoning(request.reasoning),
    ...(request.max_output_tokens == null ? {} : { maxOutputTokens: request.max_output_tokens }),
    stream: request.stream ?? false,
    includeStreamUsage: true,
    identity: findIdentity(cleanHeaders, request.prompt_cache_key),
    headers: cleanHeaders,
    warnings: [...state.warnings, ...findFieldWarnings(request)],
  };
};

const rejectServerSideState = (body: Record<string, unknown>): void => {
  if (body['conversation'] != null) {
    throw new InvalidRequestFault(
      'conversation',
      'conversation: this bridge does not support server-side conversations and stores nothing; ' +
        'omit `conversation` and send the full conversation history in `input`.',
    );
  }
  if (body['previous_response_id'] != null) {
    throw new InvalidRequestFault(
      'previous_response_id',
      'previous_response_id: this bridge stores no responses, so earlier responses cannot be referenced; ' +
        'omit `previous_response_id` and send the full conversation history in `input`.',
    );
  }
};

/** Zod reports a failed union as a bare "Invalid input"; list what each alternative expected instead. */
const parseAt = createRequestFieldReader('list-alternatives');

const convertItem = (item: unknown, path: Path, state: ConversionState): void => {
  const { type } = parseAt(openaiResponsesItemSchema, item, path);
  switch (type) {
    case undefined:
    case 'message':
      convertMessageItem(item, path, state);
      return;
    case 'function_call': {
      const call = parseAt(openaiResponsesFunctionCallItemSchema, item, path);
      state.toolNames.set(call.call_id, call.name);
      appendAssistant(state, [
        {
          type: 'tool-call',
          toolCallId: call.call_id,
          toolName: call.name,
          input: convertToolCallInput(call.arguments, [...path, 'arguments'].join('.')),
        },
      ]);
      return;
    }
    case 'custom_tool_call': {
      const call = parseAt(openaiResponsesCustomToolCallItemSchema, item, path);
      state.toolNames.set(call.call_id, call.name);
      appendAssistant(state, [
        { type: 'tool-call', toolCallId: call.call_id, toolName: call.name, input: call.input },
      ]);
      return;
    }
    case 'function_call_output':
    case 'custom_tool_call_output': {
      const output = parseAt(openaiResponsesToolOutputItemSchema, item, path);
      const content = convertUserContent(output.output, [...path, 'output'], state);
      state.conversationStarted = true;
      state.messages.push(
        createToolResultMessage(output.call_id, content, { toolName: state.toolNames.get(output.call_id) }),
      );
      return;
    }
    case 'reasoning': {
      const reasoning = parseAt(openaiResponsesReasoningItemSchema, item, path);
      const summary = (reasoning.summary ?? []).map((part) => part.text);
      const texts =
        summary.length > 0 ? summary : (reasoning.content ?? []).flatMap((part) => part.text ?? []);
      const text = texts.join('\n\n');
      const signature = reasoning.encrypted_content ?? undefined;
      if (text === '' && !signature) return;
      appendAssistant(state, [{ type: 'reasoning', text, ...(signature ? { signature } : {}) }]);
      return;
    }
    default:
      warn(
        state,
        'unsupported-content',
        `${path.join('.')}: input item type '${type}' is not supported; dropped.`,
      );
  }
};

const convertMessageItem = (item: unknown, path: Path, state: ConversionState): void => {
  const message = parseAt(openaiResponsesMessageItemSchema, item, path);
  const contentPath = [...path, 'content'];
  switch (message.role) {
    case 'system':
    case 'developer': {
      const content = convertTextOnlyContent(message.content, contentPath, state);
      if (content.length === 0) return;
      if (state.conversationStarted) state.messages.push({ role: 'system', content });
      else state.system.push(...content);
      return;
    }
    case 'user': {
      const content = convertUserContent(message.content, contentPath, state);
      state.conversationStarted = true;
      if (content.length > 0) state.messages.push({ role: 'user', content });
      return;
    }
    case 'assistant': {
      appendAssistant(state, convertTextOnlyContent(message.content, contentPath, state));
      return;
    }
    default: {
      const _exhaustive: never = message.role;
      return _exhaustive;
    }
  }
};

/** Responses history is flat; consecutive assistant-side items (reasoning, text, calls) form one turn. */
const appendAssistant = (state: ConversionState, parts: TurnAssistantPart[]): void => {
  state.conversationStarted = true;
  if (parts.length === 0) return;
  const last = state.messages.at(-1);
  if (last?.role === 'assistant') last.content.push(...parts);
  else state.messages.push({ role: 'assistant', content: parts });
};

type TypedPart = z.infer<typeof openaiResponsesTypedObjectSchema>;

const convertTextPart = (part: TypedPart, path: Path): TurnTextPart | undefined => {
  switch (part.type) {
    case 'input_text':
    case 'output_text':
    case 'text':
      return { type: 'text', text: parseAt(openaiResponsesTextPartSchema, part, path).text };
    case 'refusal':
      return { type: 'text', text: parseAt(openaiResponsesRefusalPartSchema, part, path).refusal };
    default:
      return undefined;
  }
};

const convertTextOnlyContent = (
  content: string | TypedPart[],
  path: Path,
  state: ConversionState,
): TurnTextPart[] =>
  convertTextOrParts(content, (part, index) => {
    const partPath = [...path, index];
    const text = convertTextPart(part, partPath);
    if (text) return text;
    warn(
      state,
      'unsupported-content',
      `${partPath.join('.')}: '${part.type}' content is not supported here; dropped.`,
    );
    return undefined;
  });

const convertUserContent = (
  content: string | TypedPart[],
  path: Path,
  state: ConversionState,
): TurnUserPart[] =>
  convertTextOrParts(content, (part, index): TurnUserPart | undefined => {
    const partPath = [...path, index];
    const text = convertTextPart(part, partPath);
    if (text) return text;
    if (part.type === 'input_image') return convertImagePart(part, partPath, state);
    warn(
      state,
      'unsupported-content',
      `${partPath.join('.')}: '${part.type}' content is not supported; dropped.`,
    );
    return undefined;
  });

const convertImagePart = (part: TypedPart, path: Path, state: ConversionState): TurnImagePart | undefined => {
  const image = parseAt(openaiResponsesImagePartSchema, part, path);
  if (image.image_url) {
    // Any other URL, a non-base64 data URL included, goes upstream as it is.
    const dataUrl = parseDataUrl(image.image_url);
    if (dataUrl?.base64 && dataUrl.mediaType !== '') {
      return { type: 'image', source: { kind: 'base64', mediaType: dataUrl.mediaType, data: dataUrl.data } };
    }
    return { type: 'image', source: { kind: 'url', url: image.image_url } };
  }
  const reason = image.file_id
    ? 'images by file_id cannot be resolved (no file storage)'
    : 'image without image_url';
  warn(state, 'unsupported-content', `${path.join('.')}: ${reason}; dropped.`);
  return undefined;
};

const convertTools = (tools: unknown[], state: ConversionState): TurnTool[] =>
  tools.flatMap((tool, index): TurnTool[] => {
    const path = ['tools', index];
    const { type, name } = parseAt(openaiResponsesTypedObjectSchema, tool, path);
    switch (type) {
      case 'function': {
        const fn = parseAt(openaiResponsesFunctionToolSchema, tool, path);
        return [
          {
            kind: 'function',
            name: fn.name,
            ...(fn.description ? { description: fn.description } : {}),
            inputSchema: fn.parameters ?? { type: 'object', properties: {} },
          },
        ];
      }
      case 'custom': {
        const custom = parseAt(openaiResponsesCustomToolSchema, tool, path);
        return [
          {
            kind: 'custom',
            name: custom.name,
            ...(custom.description ? { description: custom.description } : {}),
            inputSchema: createCustomToolInputSchema(describeCustomFormat(custom.format)),
          },
        ];
      }
      default: {
        const label = typeof name === 'string' ? `${type} tool '${name}'` : `${type} tool`;
        warn(state, 'unsupported-tool', `tools.${index}: ${label} is not supported by the bridge; dropped.`);
        return [];
      }
    }
  });

const describeCustomFormat = (format: OpenaiResponsesCustomTool['format']): string => {
  if (format?.type === 'grammar' && format.definition) {
    const syntax = format.syntax ? `${format.syntax} ` : '';
    return `The raw tool input as plain text (not JSON). It must match this ${syntax}grammar:\n${format.definition}`;
  }
  return 'The raw tool input as free-form plain text (not JSON).';
};

const convertToolChoice = (
  choice: OpenaiResponsesRequest['tool_choice'],
  state: ConversionState,
): TurnToolChoice => {
  if (choice == null) return { type: 'auto' };
  if (typeof choice === 'string') {
    if (choice === 'auto' || choice === 'none' || choice === 'required') return { type: choice };
    warn(state, 'unsupported-field', `tool_choice '${choice}' is not supported; using auto.`);
    return { type: 'auto' };
  }
  if (choice.type === 'function' || choice.type === 'custom') {
    if (choice.name === undefined) {
      throw new InvalidRequestFault(
        'tool_choice.name',
        'Invalid request: tool_choice.name: a tool name is required.',
      );
    }
    return { type: 'tool', name: choice.name };
  }
  if (choice.type === 'allowed_tools') {
    warn(
      state,
      'unsupported-field',
      'tool_choice allowed_tools: the tool subset is not enforced; all tools stay available.',
    );
    return choice['mode'] === 'required' ? { type: 'required' } : { type: 'auto' };
  }
  warn(state, 'unsupported-field', `tool_choice type '${choice.type}' is not supported; using auto.`);
  return { type: 'auto' };
};

const convertReasoning = (reasoning: OpenaiResponsesRequest['reasoning']): TurnReasoning => {
  const effort = readReasoningEffort(reasoning?.effort, 'reasoning.effort');
  if (effort === undefined || effort === 'none') return { requested: false };
  return { requested: true, effort };
};

const findFieldWarnings = (request: OpenaiResponsesRequest): TurnWarning[] => {
  const warnings: TurnWarning[] = [];
  if (request.parallel_tool_calls === false) {
    warnings.push({
      code: 'unsupported-field',
      message: 'parallel_tool_calls: false is not enforced; the model may still call several tools at once.',
    });
  }
  const text = request['text'];
  if (typeof text === 'object' && text !== null && 'format' in text) {
    const format: unknown = text.format;
    if (typeof format === 'object' && format !== null && 'type' in format && format.type !== 'text') {
      warnings.push({
        code: 'unsupported-field',
        message: `text.format '${String(format.type)}' (structured output) is not enforced; plain text is returned.`,
      });
    }
  }
  return warnings;
};

const findIdentity = (
  headers: Record<string, string>,
  promptCacheKey: string | null | undefined,
): TurnIdentityHints => {
  const nativeSessionId = findSessionHeader(headers);
  return {
    ...(nativeSessionId === undefined ? {} : { nativeSessionId }),
    ...(promptCacheKey ? { promptCacheKey } : {}),
  };
};
