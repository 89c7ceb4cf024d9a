/**
 * cursor-bridge as a library. Named exports only: the bridge wiring, the engine, the protocol adapters,
 * the neutral turn model and the upstream port. Internal helpers stay internal, and so do test doubles
 * (the scripted upstream is imported by tests from its own module).
 */

export { createBridge, createBridgeEngine } from './bridge/create-bridge.js';
export type { Bridge, BridgeEngine, CreateBridgeOptions } from './bridge/create-bridge.js';
export { loadConfig, defaultConfigPath } from './config/load-config.js';
export type { BridgeConfig } from './config/load-config.js';
export { ConfigError } from './config/config-error.js';
export { Engine } from './engine/engine.js';
export type { EngineOptions } from './engine/engine.js';
export type { ToolCallGuard, WorkspacePort } from './engine/engine-deps.js';
export { createLogger } from './logging/logger.js';
export { anthropicAdapter } from './protocols/anthropic/anthropic-adapter.js';
export { openaiChatAdapter } from './protocols/openai-chat/openai-chat-adapter.js';
export { openaiResponsesAdapter } from './protocols/openai-responses/openai-responses-adapter.js';
export type { ProtocolAdapter, StreamEncoder, ResponseMeta } from './protocols/protocol-adapter.js';
export { createBridgeServer } from './hosts/http/create-server.js';
export type { BridgeServerOptions } from './hosts/http/create-server.js';
export type { TurnHandler } from './hosts/turn-pipeline.js';
export { BridgeError, createTurnError } from './turn/turn-error.js';
export type { TurnError, TurnErrorKind } from './turn/turn-error.js';
export type { TurnEvent, TurnStopReason } from './turn/turn-event.js';
export type { TurnMessage, TurnRequest, TurnTool } from './turn/turn-request.js';
export type { TurnUsage } from './turn/turn-usage.js';
export { CursorUpstream } from './upstream/cursor/cursor-upstream.js';
export type {
  UpstreamEvent,
  UpstreamPort,
  UpstreamRun,
  UpstreamRunInput,
  UpstreamSession,
} from './upstream/upstream-port.js';
