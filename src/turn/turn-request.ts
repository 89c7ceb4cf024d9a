/**
 * The neutral request model. Every client protocol converts its request into a {@link TurnRequest};
 * the engine and upstreams only ever see this shape. This module imports nothing.
 */

/** The client protocol a request arrived in. */
export type TurnProtocol = 'anthropic' | 'openai-chat' | 'openai-responses';

export type TurnTextPart = { type: 'text'; text: string };

/** An image, either inline (base64) or by URL, exactly as the client sent it. */
export type TurnImagePart = {
  type: 'image';
  source: { kind: 'base64'; mediaType: string; data: string } | { kind: 'url'; url: string };
};

export type TurnUserPart = TurnTextPart | TurnImagePart;

/** A reasoning (thinking) block from an earlier assistant turn. */
export type TurnReasoningPart = { type: 'reasoning'; text: string; signature?: string };

/** A tool call from an earlier assistant turn. `input` is the parsed JSON arguments (or the raw string for custom tools). */
export type TurnToolCallPart = { type: 'tool-call'; toolCallId: string; toolName: string; input: unknown };

/**
 * A hosted web search (or page open) of an earlier answer, as the client sent it back: what was searched
 * for or opened, and the sources it found (or why none). The agent that ran it holds it already, so it
 * counts for a replay's prompt, not for matching the transcript with what an agent holds.
 */
export type TurnWebSearchPart = {
  type: 'web-search';
  /** The client's id of the search, linking its call and its result where the protocol splits them. */
  id: string;
  query?: string;
  url?: string;
  sources?: Array<{ url: string; title?: string; snippet?: string }>;
  /** Why the search gave nothing (the protocol's error code). */
  error?: string;
};

export type TurnAssistantPart = TurnTextPart | TurnReasoningPart | TurnToolCallPart | TurnWebSearchPart;

/**
 * One transcript entry. Tool results are their own entries (Anthropic puts them inside a user message;
 * they are split out in order). `system` entries are system/developer text that appears *inside* the
 * conversation (Claude Code's mid-conversation `role: "system"` message, Codex `developer` items after
 * the first user turn); top-level system text goes to {@link TurnRequest.system}.
 */
export type TurnMessage =
  | { role: 'system'; content: TurnTextPart[] }
  | { role: 'user'; content: TurnUserPart[] }
  | { role: 'assistant'; content: TurnAssistantPart[] }
  | {
      role: 'tool';
      toolCallId: string;
      /** Known when the protocol carries it (Responses does not). */
      toolName?: string;
      content: TurnUserPart[];
      isError: boolean;
    };

/** A JSON Schema object, passed through untouched. */
export type JsonSchema = Record<string, unknown>;

/**
 * A tool the client hosts. `function` tools take a JSON object; `custom` tools (Codex `apply_patch`)
 * take one free-form string, mirrored upstream as `{ input: string }`.
 */
export type TurnTool = {
  kind: 'function' | 'custom';
  name: string;
  description?: string;
  inputSchema: JsonSchema;
  /**
   * How the client's own protocol addresses the tool when `name` alone does not say it: a tool inside a
   * namespace (Codex's `{ namespace, name }`, mirrored as one flat `name`), or one called through an item of
   * its own (`call`, e.g. Codex's client-executed `tool_search`). Set and read only by the protocol that
   * received the tool; the engine and upstreams mirror `name` and ignore it.
   */
  clientAddress?: { name: string; namespace?: string; call?: string };
};

/**
 * A web search the client offered the model as a **hosted** tool: run by the server, not by the client
 * (Anthropic's `web_search_*` server tool, the Responses `web_search` tool with live access, Chat
 * Completions' `web_search_options`). Cursor runs such searches on its own servers; the answer reports
 * each one in the protocol's own shape.
 */
export type TurnWebSearch = {
  /** The tool's name in the client's protocol (Anthropic's server tool `name`, e.g. `web_search`). */
  name: string;
  /** Keep only sources on these domains (and their subdomains). Cursor has no such filter: the bridge applies it. */
  allowedDomains?: string[];
  /** Drop sources on these domains (and their subdomains). */
  blockedDomains?: string[];
  /** At most this many searches per answer; later ones are reported as refused. */
  maxUses?: number;
  /** Where the user is, as the client described it (a hint for the prompt; Cursor has no such setting). */
  userLocation?: { city?: string; region?: string; country?: string; timezone?: string };
  /** Pages may also be opened (Cursor's hosted fetch), reported as the protocol's page-open action. */
  openPages?: boolean;
};

export type TurnToolChoice =
  { type: 'auto' } | { type: 'none' } | { type: 'required' } | { type: 'tool'; name: string };

/** Effort levels across protocols; `xhigh` is GPT's "extra-high", `max` Anthropic's top level. */
export type TurnReasoningEffort = 'minimal' | 'low' | 'medium' | 'high' | 'xhigh' | 'max';

/**
 * What the client asked for in reasoning. `requested: false` covers no thinking / effort / reasoning
 * field, a setting that turns reasoning off (`thinking.disabled`) and effort `none`. `effort` is absent
 * when reasoning is requested without a level (Anthropic adaptive thinking, Codex's `reasoning:
 * {summary: "auto"}`): the upstream then runs the model's default effort.
 */
export type TurnReasoning = { requested: boolean; effort?: TurnReasoningEffort; budgetTokens?: number };

/** A harmless unsupported input we dropped or downgraded; logged and carried, never a 400. */
export type TurnWarning = {
  code: 'unsupported-tool' | 'unsupported-field' | 'unsupported-content';
  message: string;
};

/** What the protocol adapter found about conversation identity; the engine decides what it means. */
export type TurnIdentityHints = {
  /** The client's own session id and where it came from (e.g. `metadata.user_id`, `x-session-id`). */
  nativeSessionId?: { value: string; source: string };
  /** OpenAI `prompt_cache_key`, a fallback identity for Chat and Responses. */
  promptCacheKey?: string;
};

export interface TurnRequest {
  protocol: TurnProtocol;
  /** The model string as the client sent it (`provider,model` allowed). */
  model: string;
  /** Top-level system / instructions text, in order. */
  system: TurnTextPart[];
  messages: TurnMessage[];
  tools: TurnTool[];
  /** Hosted web search the client offered (absent: the model may not search the web). */
  webSearch?: TurnWebSearch;
  toolChoice: TurnToolChoice;
  reasoning: TurnReasoning;
  maxOutputTokens?: number;
  stream: boolean;
  /** Chat Completions `stream_options.include_usage`; other protocols always report usage. */
  includeStreamUsage: boolean;
  identity: TurnIdentityHints;
  /** Lower-cased request headers (secrets removed); identity and client detection read these. */
  headers: Record<string, string>;
  warnings: TurnWarning[];
}
