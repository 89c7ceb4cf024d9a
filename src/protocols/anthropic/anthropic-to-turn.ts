import type { ParseResult } from '../protocol-adapter.js';
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
import {
  anthropicBase64SourceSchema,
  anthropicBlockHeadSchema,
  anthropicFunctionToolSchema,
  anthropicImageBlockSchema,
  anthropicRequestSchema,
  anthropicServerToolUseBlockSchema,
  anthropicTextBlockSchema,
  anthropicThinkingBlockSchema,
  anthropicToolReferenceBlockSchema,
  anthropicToolResultBlockSchema,
  anthropicToolUseBlockSchema,
  anthropicUrlSourceSchema,
  anthropicWebSearchToolResultBlockSchema,
  anthropicWebSearchToolSchema,
  isPlainAnthropicRequest,
  isPlainFunctionTool,
  isPlainToolResultBlock,
  isPlainToolUseBlock,
  type AnthropicMessage,
  type AnthropicRequest,
  type AnthropicToolChoice,
} from './anthropic-schema.js';
import { mergeWebSearchParts, readServerToolUseInput, readWebSearchResult } from './anthropic-web-search.js';
import { warn, type BaseConversionState } from '../shared/conversion-state.js';
import { fileReferenceNote } from '../shared/file-reference-note.js';
import { readUserLocation } from '../shared/read-user-location.js';
import { convertTextOrParts } from '../shared/convert-text-or-parts.js';
import { convertToolCallInput } from '../shared/convert-tool-call-input.js';
import { createRequestFieldReader } from '../shared/create-request-field-reader.js';
import { createToolResultMessage } from '../shared/create-tool-result-message.js';
import { isRecord } from '../../../lib/is-record.js';
import { catchInvalidRequest, InvalidRequestFault } from '../shared/invalid-request-fault.js';
import { readReasoningEffort } from '../shared/read-reasoning-effort.js';
import { resolveTurnReasoning } from '../shared/resolve-turn-reasoning.js';
import { safeParseJson } from '../shared/safe-parse-json.js';
import { sanitizeHeaders } from '../shared/sanitize-headers.js';

/** Top-level fields read by the converter, or harmless to ignore without a warning. */
const knownFields: ReadonlySet<string> = new Set([
  'model',
  'system',
  'messages',
  'tools',
  'tool_choice',
  'thinking',
  'output_config',
  'max_tokens',
  'stream',
  'metadata',
  'stop_sequences',
  'context_management',
  'temperature',
  'top_p',
  'top_k',
  'service_tier',
  'cache_control',
]);

/** Claude Code's first system block: a per-version billing line, not prompt text. */
const billingHeaderPrefix = 'x-anthropic-billing-header:';

type ConversionState = BaseConversionState;

/** zod's own union message (the content union carries a custom one), as this adapter always answered. */
const parseAt = createRequestFieldReader('as-reported');

/**
 * Fast paths for the two checks every content block goes through, taken only when the schema is sure
 * to accept (then it would return these very values); anything else is left to the schema and its error.
 * They matter because the process stays cold (a few dozen requests between SDK runs), where a zod
 * `safeParse` per block is a measurable share of the bridge's work on a tool result.
 */
const blockTypeAt = (block: unknown, path: string): string => {
  if (isRecord(block) && typeof block['type'] === 'string') return block['type'];
  return parseAt(anthropicBlockHeadSchema, block, path).type;
};

/** A text block's text (see {@link blockTypeAt}). */
const textAt = (block: unknown, path: string): string => {
  if (isRecord(block) && block['type'] === 'text' && typeof block['text'] === 'string') return block['text'];
  return parseAt(anthropicTextBlockSchema, block, path).text;
};

const convertImageSource = (
  source: unknown,
  path: string,
  state: ConversionState,
): TurnUserPart | undefined => {
  const head = parseAt(anthropicBlockHeadSchema, source, path);
  if (head.type === 'base64') {
    const base64 = parseAt(anthropicBase64SourceSchema, source, path);
    return { type: 'image', source: { kind: 'base64', mediaType: base64.media_type, data: base64.data } };
  }
  if (head.type === 'url') {
    return {
      type: 'image',
      source: { kind: 'url', url: parseAt(anthropicUrlSourceSchema, source, path).url },
    };
  }
  if (head.type === 'file') {
    const fileId = isRecord(source) && typeof source['file_id'] === 'string' ? source['file_id'] : '';
    warn(
      state,
      'unsupported-content',
      `${path}: an image by file_id cannot be resolved (the bridge has no Files API); the model gets a note instead`,
    );
    return fileReferenceNote(fileId);
  }
  warn(state, 'unsupported-content', `${path}: image source type "${head.type}" is not supported; dropped`);
  return undefined;
};

/** A text or image block of user content or of a tool result; other kinds are dropped with a warning. */
const convertUserBlock = (block: unknown, path: string, state: ConversionState): TurnUserPart | undefined => {
  const type = blockTypeAt(block, path);
  switch (type) {
    case 'text':
      return { type: 'text', text: textAt(block, path) };
    case 'image':
      return convertImageSource(
        parseAt(anthropicImageBlockSchema, block, path).source,
        `${path}.source`,
        state,
      );
    case 'tool_reference':
      // ToolSearch loaded a deferred tool: the next request's tools carry its definition (the engine
      // re-sends a parked turn when the tool set grows), so the result itself is a note.
      return {
        type: 'text',
        text: `Loaded tool: ${parseAt(anthropicToolReferenceBlockSchema, block, path).tool_name}`,
      };
    default:
      warn(state, 'unsupported-content', `${path}: content block type "${type}" is not supported; dropped`);
      return undefined;
  }
};

const convertTextOnly = (content: string | unknown[], path: string, state: ConversionState): TurnTextPart[] =>
  convertTextOrParts(content, (block, index): TurnTextPart | undefined => {
    const blockPath = `${path}.${index}`;
    const type = blockTypeAt(block, blockPath);
    if (type === 'text') return { type: 'text', text: textAt(block, blockPath) };
    warn(state, 'unsupported-content', `${blockPath}: "${type}" is not text; dropped`);
    return undefined;
  });

const convertToolResultContent = (
  content: string | unknown[] | undefined,
  path: string,
  state: ConversionState,
): TurnUserPart[] =>
  content === undefined
    ? []
    : convertTextOrParts(content, (block, index) => convertUserBlock(block, `${path}.${index}`, state));

/** A user message: text and images; each tool_result becomes its own `tool` entry, order preserved. */
const convertUserMessage = (
  content: string | unknown[],
  path: string,
  state: ConversionState,
): TurnMessage[] => {
  if (typeof content === 'string') return [{ role: 'user', content: [{ type: 'text', text: content }] }];
  const messages: TurnMessage[] = [];
  let pending: TurnUserPart[] = [];
  const flush = (): void => {
    if (pending.length > 0) messages.push({ role: 'user', content: pending });
    pending = [];
  };
  content.forEach((block, index) => {
    const blockPath = `${path}.${index}`;
    const type = blockTypeAt(block, blockPath);
    if (type !== 'tool_result') {
      const part = convertUserBlock(block, blockPath, state);
      if (part) pending.push(part);
      return;
    }
    const result = isPlainToolResultBlock(block)
      ? block
      : parseAt(anthropicToolResultBlockSchema, block, blockPath);
    flush();
    messages.push(
      createToolResultMessage(
        result.tool_use_id,
        convertToolResultContent(result.content, `${blockPath}.content`, state),
        { isError: result.is_error === true },
      ),
    );
  });
  flush();
  return messages;
};

const convertAssistantBlock = (
  block: unknown,
  path: string,
  state: ConversionState,
): TurnAssistantPart | undefined => {
  const type = blockTypeAt(block, path);
  switch (type) {
    case 'text':
      return { type: 'text', text: textAt(block, path) };
    case 'tool_use': {
      const call = isPlainToolUseBlock(block) ? block : parseAt(anthropicToolUseBlockSchema, block, path);
      const input =
        typeof call.input === 'string'
          ? convertToolCallInput(call.input, `${path}.input`)
          : (call.input ?? {});
      return { type: 'tool-call', toolCallId: call.id, toolName: call.name, input };
    }
    case 'thinking': {
      const thinking = parseAt(anthropicThinkingBlockSchema, block, path);
      return {
        type: 'reasoning',
        text: thinking.thinking,
        ...(thinking.signature ? { signature: thinking.signature } : {}),
      };
    }
    case 'redacted_thinking':
      // Opaque Anthropic ciphertext: meaningless to any other model.
      return undefined;
    case 'server_tool_use': {
      // A hosted search of an earlier answer; its result block follows and completes the part.
      const use = parseAt(anthropicServerToolUseBlockSchema, block, path);
      return { type: 'web-search', id: use.id, ...readServerToolUseInput(use.input) };
    }
    case 'web_search_tool_result': {
      const result = parseAt(anthropicWebSearchToolResultBlockSchema, block, path);
      return { type: 'web-search', id: result.tool_use_id, ...readWebSearchResult(result.content) };
    }
    default:
      warn(state, 'unsupported-content', `${path}: content block type "${type}" is not supported; dropped`);
      return undefined;
  }
};

const convertMessage = (message: AnthropicMessage, path: string, state: ConversionState): TurnMessage[] => {
  const contentPath = `${path}.content`;
  switch (message.role) {
    case 'system': {
      const content = convertTextOnly(message.content, contentPath, state);
      return content.length > 0 ? [{ role: 'system', content }] : [];
    }
    case 'user':
      return convertUserMessage(message.content, contentPath, state);
    case 'assistant': {
      const content: TurnAssistantPart[] = mergeWebSearchParts(
        convertTextOrParts(message.content, (block, index) =>
          convertAssistantBlock(block, `${contentPath}.${index}`, state),
        ),
      );
      return content.length > 0 ? [{ role: 'assistant', content }] : [];
    }
    default: {
      const _exhaustive: never = message.role;
      return _exhaustive;
    }
  }
};

const convertSystem = (system: AnthropicRequest['system'], state: ConversionState): TurnTextPart[] => {
  if (system === undefined) return [];
  if (typeof system === 'string') return system === '' ? [] : [{ type: 'text', text: system }];
  return convertTextOnly(system, 'system', state).filter(
    (part) => !part.text.startsWith(billingHeaderPrefix),
  );
};

/**
 * The hosted web search among the tools, when the client offered one (`web_search_*`). Its filters are
 * kept as given; the engine applies them to the sources (Cursor's search has none of its own).
 */
const convertWebSearch = (
  tools: unknown[] | undefined,
  state: ConversionState,
): TurnWebSearch | undefined => {
  let found: TurnWebSearch | undefined;
  (tools ?? []).forEach((tool, index) => {
    if (!isRecord(tool) || typeof tool['type'] !== 'string' || !tool['type'].startsWith('web_search_'))
      return;
    const parsed = parseAt(anthropicWebSearchToolSchema, tool, `tools.${index}`);
    if (found !== undefined) {
      warn(state, 'unsupported-tool', `tools.${index}: a second web search tool "${parsed.name}"; ignored`);
      return;
    }
    const userLocation = readUserLocation(parsed.user_location);
    found = {
      name: parsed.name,
      ...(parsed.allowed_domains ? { allowedDomains: parsed.allowed_domains } : {}),
      ...(parsed.blocked_domains ? { blockedDomains: parsed.blocked_domains } : {}),
      ...(parsed.max_uses ? { maxUses: parsed.max_uses } : {}),
      ...(userLocation === undefined ? {} : { userLocation }),
    };
  });
  return found;
};

/**
 * Client tools (with `input_schema`) are kept, `defer_loading` ones too; the hosted web search is read
 * by {@link convertWebSearch}; other server tools are dropped.
 */
const convertTools = (tools: unknown[] | undefined, state: ConversionState): TurnTool[] =>
  (tools ?? []).flatMap((tool, index): TurnTool[] => {
    const parsed = isPlainFunctionTool(tool)
      ? { success: true as const, data: tool }
      : anthropicFunctionToolSchema.safeParse(tool);
    if (parsed.success) {
      const { name, description, input_schema } = parsed.data;
      return [
        {
          kind: 'function',
          name,
          ...(description === undefined ? {} : { description }),
          inputSchema: input_schema,
        },
      ];
    }
    const head = typeof tool === 'object' && tool !== null ? (tool as Record<string, unknown>) : {};
    if (typeof head.type === 'string' && head.type.startsWith('web_search_')) return [];
    const label = [head.type, head.name].filter((value) => typeof value === 'string').join(' ') || 'tool';
    warn(
      state,
      'unsupported-tool',
      `tools.${index}: ${label} is not a client tool with an input_schema; dropped`,
    );
    return [];
  });

const convertToolChoice = (choice: AnthropicToolChoice | undefined): TurnToolChoice => {
  if (choice === undefined) return { type: 'auto' };
  switch (choice.type) {
    case 'auto':
      return { type: 'auto' };
    case 'any':
      return { type: 'required' };
    case 'none':
      return { type: 'none' };
    case 'tool':
      return { type: 'tool', name: choice.name };
    default: {
      const _exhaustive: never = choice;
      return _exhaustive;
    }
  }
};

/**
 * `thinking` plus `output_config.effort`, through the one rule of every protocol
 * ({@link resolveTurnReasoning}): `disabled` and effort `none` turn reasoning off, an effort asks for
 * that level (with or without `thinking`), any other `thinking` asks for reasoning without an effort.
 * `budget_tokens` rides along on a requested `enabled` thinking.
 */
const convertReasoning = (request: AnthropicRequest, state: ConversionState): TurnReasoning => {
  const effort = readReasoningEffort(request.output_config?.effort, 'output_config.effort');
  const thinking = request.thinking;
  const reasoning = resolveTurnReasoning({
    effort,
    setting: thinking === undefined ? 'absent' : thinking.type === 'disabled' ? 'off' : 'on',
  });
  if (thinking === undefined || !reasoning.requested) return reasoning;
  switch (thinking.type) {
    case 'enabled':
      return thinking.budget_tokens === undefined
        ? reasoning
        : { ...reasoning, budgetTokens: thinking.budget_tokens };
    case 'adaptive':
    case 'between_tools':
      return reasoning;
    default:
      warn(
        state,
        'unsupported-field',
        `thinking.type "${thinking.type}" is not supported; treated as adaptive`,
      );
      return reasoning;
  }
};

/**
 * The session a `metadata.user_id` names: Claude Code's JSON `{…, session_id}`, an older
 * Claude Code's `…_session_<id>` suffix, or else the raw string (a JSON value without `session_id`
 * included: it is still the client's own id). Absent or empty: the `x-claude-code-session-id` header.
 */
const convertIdentity = (
  userId: string | null | undefined,
  headers: Record<string, string>,
): TurnIdentityHints => {
  if (typeof userId === 'string' && userId !== '') {
    return { nativeSessionId: { value: findUserIdSession(userId), source: 'metadata.user_id' } };
  }
  const header = headers['x-claude-code-session-id'];
  return header ? { nativeSessionId: { value: header, source: 'x-claude-code-session-id' } } : {};
};

const findUserIdSession = (userId: string): string => {
  const parsed = safeParseJson(userId);
  if (!parsed.ok) return /_session_([^_]+)$/.exec(userId)?.[1] ?? userId;
  const { value } = parsed;
  const sessionId =
    typeof value === 'object' && value !== null && 'session_id' in value ? value.session_id : '';
  return typeof sessionId === 'string' && sessionId !== '' ? sessionId : userId;
};

const warnIgnoredFields = (
  body: Record<string, unknown>,
  request: AnthropicRequest,
  state: ConversionState,
): void => {
  const unknown = Object.keys(body).filter((key) => !knownFields.has(key));
  if (unknown.length > 0)
    warn(state, 'unsupported-field', `ignored unsupported fields: ${unknown.join(', ')}`);
  if (request.stop_sequences && request.stop_sequences.length > 0) {
    warn(state, 'unsupported-field', 'stop_sequences are not supported; ignored');
  }
  if (request.output_config && 'format' in request.output_config && request.output_config.format != null) {
    warn(state, 'unsupported-field', 'output_config.format (structured output) is not supported; ignored');
  }
};

/**
 * Convert an Anthropic Messages request body (already `JSON.parse`d) and its headers into a TurnRequest.
 * Never throws. A malformed field gives `{ok: false}` with an `invalid-request` error whose `param`
 * is the field path (`messages.2.content`); unknown fields, block kinds and server tools become warnings.
 */
export const convertAnthropicRequestToTurn = (body: unknown, headers: Record<string, string>): ParseResult =>
  catchInvalidRequest(() => {
    if (!isRecord(body)) {
      throw new InvalidRequestFault(undefined, 'Invalid request: the body must be a JSON object');
    }
    const state: ConversionState = { warnings: [] };
    const request = isPlainAnthropicRequest(body) ? body : parseAt(anthropicRequestSchema, body, '');
    const normalizedHeaders = sanitizeHeaders(headers);
    warnIgnoredFields(body as Record<string, unknown>, request, state);
    const system = convertSystem(request.system, state);
    const messages = request.messages.flatMap((message, index) =>
      convertMessage(message, `messages.${index}`, state),
    );
    const webSearch = convertWebSearch(request.tools, state);
    return {
      protocol: 'anthropic',
      model: request.model,
      system,
      messages,
      tools: convertTools(request.tools, state),
      ...(webSearch === undefined ? {} : { webSearch }),
      toolChoice: convertToolChoice(request.tool_choice),
      reasoning: convertReasoning(request, state),
      ...(request.max_tokens === undefined ? {} : { maxOutputTokens: request.max_tokens }),
      stream: request.stream === true,
      includeStreamUsage: true,
      identity: convertIdentity(request.metadata?.user_id, normalizedHeaders),
      headers: normalizedHeaders,
      warnings: state.warnings,
    };
  });
