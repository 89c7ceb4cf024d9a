import type { z } from 'zod';
import type { ParseResult } from '../protocol-adapter.js';
import type {
  TurnAssistantPart,
  TurnIdentityHints,
  TurnMessage,
  TurnReasoning,
  TurnRequest,
  TurnTextPart,
  TurnTool,
  TurnToolChoice,
  TurnUserPart,
  TurnWarning,
  TurnWebSearch,
} from '../../turn/turn-request.js';
import {
  openaiResponsesAdditionalToolsItemSchema,
  openaiResponsesCustomToolCallItemSchema,
  openaiResponsesCustomToolSchema,
  openaiResponsesFunctionCallItemSchema,
  openaiResponsesFunctionToolSchema,
  openaiResponsesImagePartSchema,
  openaiResponsesItemSchema,
  openaiResponsesMessageItemSchema,
  openaiResponsesNamespaceToolSchema,
  openaiResponsesReasoningItemSchema,
  openaiResponsesRefusalPartSchema,
  openaiResponsesRequestSchema,
  openaiResponsesTextPartSchema,
  openaiResponsesToolOutputItemSchema,
  openaiResponsesToolSearchCallItemSchema,
  openaiResponsesToolSearchOutputItemSchema,
  openaiResponsesToolSearchToolSchema,
  openaiResponsesTypedObjectSchema,
  openaiResponsesWebSearchCallItemSchema,
  openaiResponsesWebSearchToolSchema,
} from './openai-responses-schema.js';
import {
  createUnavailableToolsModelNote,
  isUnavailableToolsUserNote,
} from './openai-responses-tool-notes.js';
import type { OpenaiResponsesCustomTool, OpenaiResponsesRequest } from './openai-responses-schema.js';
import {
  cachedWebSearchReason,
  readWebSearchCallItem,
  readWebSearchTool,
  webSearchToolTypes,
} from './openai-responses-web-search.js';
import { warn, type BaseConversionState } from '../shared/conversion-state.js';
import { convertTextOrParts } from '../shared/convert-text-or-parts.js';
import { createCustomToolInputSchema } from '../shared/custom-tool-input.js';
import { convertToolCallInput } from '../shared/convert-tool-call-input.js';
import { createRequestFieldReader } from '../shared/create-request-field-reader.js';
import { createToolResultMessage } from '../shared/create-tool-result-message.js';
import { findSessionHeader } from '../shared/find-session-header.js';
import { catchInvalidRequest, InvalidRequestFault } from '../shared/invalid-request-fault.js';
import { dataUrlBase64, parseDataUrl } from '../shared/parse-data-url.js';
import { fileReferenceNote } from '../shared/file-reference-note.js';
import { readReasoningEffort } from '../shared/read-reasoning-effort.js';
import { resolveTurnReasoning } from '../shared/resolve-turn-reasoning.js';
import { sanitizeHeaders } from '../shared/sanitize-headers.js';

type Path = readonly (string | number)[];

type ConversionState = BaseConversionState & {
  system: TurnTextPart[];
  messages: TurnMessage[];
  /** Tool names by call id, from earlier `function_call` / `custom_tool_call` items. */
  toolNames: Map<string, string>;
  /** True once a non-system item was seen: later system/developer messages stay in the transcript. */
  conversationStarted: boolean;
  /** Tools offered inside `input`: `additional_tools` items, and those a `tool_search_output` loaded. */
  inputTools: TurnTool[];
  /** The hosted web search the client offered (the first live `web_search` tool), run by the server. */
  webSearch?: TurnWebSearch;
};

/**
 * Convert an OpenAI Responses request body and its headers into a {@link TurnRequest}.
 * Tools come from `tools`, from `additional_tools` input items and from the `tool_search_output` items that
 * loaded them; a namespace's tools are mirrored as `<namespace>__<name>`. A live `web_search` tool is the
 * request's hosted {@link TurnRequest.webSearch} (never a client tool); earlier `web_search_call` items are
 * assistant `web-search` parts. A tool that cannot be offered (hosted by OpenAI, such as a cached
 * `web_search` or `file_search`) becomes an `unsupported-tool` warning naming it and a note at the end of
 * the system text, so the model knows. Other unsupported but harmless inputs (unknown item types, file
 * references) become warnings.
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
    inputTools: [],
  };
  if (typeof request.input === 'string') {
    state.messages.push({ role: 'user', content: [{ type: 'text', text: request.input }] });
  } else {
    request.input.forEach((item, index) => convertItem(item, ['input', index], state));
  }
  const cleanHeaders = sanitizeHeaders(headers);
  const tools = uniqueTools([...convertTools(request.tools ?? [], ['tools'], state), ...state.inputTools]);
  const modelNote = createUnavailableToolsModelNote(state.warnings);
  if (modelNote !== undefined) state.system.push({ type: 'text', text: modelNote });
  return {
    protocol: 'openai-responses',
    model: request.model,
    system: state.system,
    messages: state.messages,
    tools,
    ...(state.webSearch === undefined ? {} : { webSearch: state.webSearch }),
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
      appendToolCall(
        state,
        call.call_id,
        mirroredToolName(call.namespace, call.name),
        convertToolCallInput(call.arguments, [...path, 'arguments'].join('.')),
      );
      return;
    }
    case 'custom_tool_call': {
      const call = parseAt(openaiResponsesCustomToolCallItemSchema, item, path);
      appendToolCall(state, call.call_id, mirroredToolName(call.namespace, call.name), call.input);
      return;
    }
    case 'tool_search_call': {
      const call = parseAt(openaiResponsesToolSearchCallItemSchema, item, path);
      appendToolCall(state, call.call_id, toolSearchName, call.arguments ?? {});
      return;
    }
    case 'tool_search_output': {
      const output = parseAt(openaiResponsesToolSearchOutputItemSchema, item, path);
      const loaded = convertTools(output.tools ?? [], [...path, 'tools'], state);
      state.inputTools.push(...loaded);
      state.conversationStarted = true;
      const text =
        loaded.length === 0
          ? 'No tools were loaded.'
          : `Loaded tools, callable from now on: ${loaded.map((tool) => tool.name).join(', ')}`;
      state.messages.push(
        createToolResultMessage(output.call_id, [{ type: 'text', text }], {
          toolName: state.toolNames.get(output.call_id),
        }),
      );
      return;
    }
    case 'additional_tools': {
      const { tools } = parseAt(openaiResponsesAdditionalToolsItemSchema, item, path);
      state.inputTools.push(...convertTools(tools, [...path, 'tools'], state));
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
    case 'web_search_call': {
      const call = parseAt(openaiResponsesWebSearchCallItemSchema, item, path);
      appendAssistant(state, [readWebSearchCallItem(call, `ws_${path.join('_')}`)]);
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
      const content = convertTextOnlyContent(message.content, contentPath, state);
      // The bridge's own note about unavailable tools, resent as history: the agent never said it.
      if (content.length > 0 && content.every((part) => isUnavailableToolsUserNote(part.text))) return;
      appendAssistant(state, content);
      return;
    }
    default: {
      const _exhaustive: never = message.role;
      return _exhaustive;
    }
  }
};

const appendToolCall = (state: ConversionState, callId: string, toolName: string, input: unknown): void => {
  state.toolNames.set(callId, toolName);
  appendAssistant(state, [{ type: 'tool-call', toolCallId: callId, toolName, input }]);
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

const convertImagePart = (part: TypedPart, path: Path, state: ConversionState): TurnUserPart | undefined => {
  const image = parseAt(openaiResponsesImagePartSchema, part, path);
  if (image.image_url) {
    const dataUrl = parseDataUrl(image.image_url);
    if (dataUrl !== undefined) {
      const mediaType = dataUrl.mediaType || 'application/octet-stream';
      return { type: 'image', source: { kind: 'base64', mediaType, data: dataUrlBase64(dataUrl) } };
    }
    // http(s) is fetched by the bridge; any other scheme becomes a note to the model there.
    return { type: 'image', source: { kind: 'url', url: image.image_url } };
  }
  if (image.file_id) {
    warn(
      state,
      'unsupported-content',
      `${path.join('.')}: an image by file_id cannot be resolved (the bridge has no Files API); the model gets a note instead.`,
    );
    return fileReferenceNote(image.file_id);
  }
  warn(state, 'unsupported-content', `${path.join('.')}: image without image_url; dropped.`);
  return undefined;
};

/** The name the model sees for a client tool; a namespace's tools are `<namespace>__<name>`. */
const mirroredToolName = (namespace: string | null | undefined, name: string): string =>
  namespace ? `${namespace}__${name}` : name;

/** The mirrored name of Codex's client-executed `tool_search` tool, which has no name of its own. */
const toolSearchName = 'tool_search';

const convertTools = (
  tools: unknown[],
  path: Path,
  state: ConversionState,
  namespace?: NamespaceInfo,
): TurnTool[] => tools.flatMap((tool, index) => convertTool(tool, [...path, index], state, namespace));

type NamespaceInfo = { name: string; description: string | undefined };

const convertTool = (
  tool: unknown,
  path: Path,
  state: ConversionState,
  namespace?: NamespaceInfo,
): TurnTool[] => {
  const { type, name } = parseAt(openaiResponsesTypedObjectSchema, tool, path);
  if (namespace === undefined && webSearchToolTypes.has(type)) {
    convertWebSearchTool(tool, type, path, state);
    return [];
  }
  const address = (bareName: string): Pick<TurnTool, 'name' | 'clientAddress'> =>
    namespace === undefined
      ? { name: bareName }
      : {
          name: mirroredToolName(namespace.name, bareName),
          clientAddress: { name: bareName, namespace: namespace.name },
        };
  const describe = (description: string | null | undefined): Pick<TurnTool, 'description'> => {
    const text = [description, namespace?.description && `(${namespace.name}: ${namespace.description})`]
      .filter((part) => part)
      .join('\n\n');
    return text === '' ? {} : { description: text };
  };
  switch (type) {
    case 'function': {
      const fn = parseAt(openaiResponsesFunctionToolSchema, tool, path);
      return [
        {
          kind: 'function',
          ...address(fn.name),
          ...describe(fn.description),
          inputSchema: fn.parameters ?? { type: 'object', properties: {} },
        },
      ];
    }
    case 'custom': {
      const custom = parseAt(openaiResponsesCustomToolSchema, tool, path);
      return [
        {
          kind: 'custom',
          ...address(custom.name),
          ...describe(custom.description),
          inputSchema: createCustomToolInputSchema(describeCustomFormat(custom.format)),
        },
      ];
    }
    case 'namespace': {
      if (namespace !== undefined) break;
      const group = parseAt(openaiResponsesNamespaceToolSchema, tool, path);
      return convertTools(group.tools, [...path, 'tools'], state, {
        name: group.name,
        description: group.description ?? undefined,
      });
    }
    case 'tool_search': {
      if (namespace !== undefined) break;
      const search = parseAt(openaiResponsesToolSearchToolSchema, tool, path);
      const execution = search.execution ?? 'server';
      if (execution !== 'client') {
        warn(
          state,
          'unsupported-tool',
          `${path.join('.')}: tool_search tool with execution '${execution}' (searched by OpenAI's servers, ` +
            'not by the client) cannot be offered through cursor-bridge; dropped.',
        );
        return [];
      }
      return [
        {
          kind: 'function',
          name: toolSearchName,
          ...describe(search.description),
          inputSchema: search.parameters ?? { type: 'object', properties: {} },
          clientAddress: { name: toolSearchName, call: 'tool_search_call' },
        },
      ];
    }
    default:
      break;
  }
  warn(state, 'unsupported-tool', `${path.join('.')}: ${describeUnsupportedTool(type, name, namespace)}`);
  return [];
};

/**
 * OpenAI's hosted web search: a live one becomes the request's {@link TurnWebSearch} (the server runs it
 * on Cursor's search); a cached one cannot be offered and is an `unsupported-tool` warning, so the model
 * and the user are told. A second live one (the same tool in `tools` and in `input`) adds nothing.
 */
const convertWebSearchTool = (tool: unknown, type: string, path: Path, state: ConversionState): void => {
  const webSearch = readWebSearchTool(parseAt(openaiResponsesWebSearchToolSchema, tool, path));
  if (webSearch === undefined) {
    warn(state, 'unsupported-tool', `${path.join('.')}: ${type} tool ${cachedWebSearchReason}`);
    return;
  }
  state.webSearch ??= webSearch;
};

const describeUnsupportedTool = (
  type: string,
  name: unknown,
  namespace: NamespaceInfo | undefined,
): string => {
  const label =
    typeof name === 'string' ? `${type} tool '${mirroredToolName(namespace?.name, name)}'` : `${type} tool`;
  const where = namespace === undefined ? '' : ' inside a namespace';
  return `${label}${where} is not supported by the bridge; dropped.`;
};

/** A tool offered twice (in `tools` and again in `input`, or loaded by two searches) is mirrored once. */
const uniqueTools = (tools: TurnTool[]): TurnTool[] => {
  const seen = new Set<string>();
  return tools.filter((tool) => {
    if (seen.has(tool.name)) return false;
    seen.add(tool.name);
    return true;
  });
};

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

/**
 * `reasoning`, through the one rule of every protocol ({@link resolveTurnReasoning}): a `reasoning`
 * object without an effort asks for reasoning without an effort — Codex sends `{summary: "auto"}` when
 * no effort is configured for the model, and `{effort, summary}` when one is.
 */
const convertReasoning = (reasoning: OpenaiResponsesRequest['reasoning']): TurnReasoning =>
  resolveTurnReasoning({
    effort: readReasoningEffort(reasoning?.effort, 'reasoning.effort'),
    setting: reasoning === undefined || reasoning === null ? 'absent' : 'on',
  });

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
