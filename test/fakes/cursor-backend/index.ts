/**
 * The project's fake Cursor backend for wire tests of the real `@cursor/sdk` (see fake-cursor-backend.ts,
 * run-context.ts for the scenario API, sdk-test-env.ts for per-file SDK setup).
 */

export type { JsonObject } from './client-message.js';
export type { ConnectErrorCode } from './connect-envelope.js';
export type { FakeModel } from './default-models.js';
export { DEFAULT_FAKE_MODELS } from './default-models.js';
export { fakeShellArgs } from './exec-args.js';
export type {
  FakeAuthMode,
  FakeCursorBackend,
  FakeCursorBackendOptions,
  FakeRequestLogEntry,
} from './fake-cursor-backend.js';
export { firstOfEachRun, LOGGED_HEADERS, startFakeCursorBackend } from './fake-cursor-backend.js';
export type { FakeStreamTrace } from './fake-stream.js';
export type {
  FakeConversationTooLongOptions,
  FakeCursorLimit,
  FakeExecKind,
  FakeFailOptions,
  FakeHistoryTurn,
  FakeHostedOutcome,
  FakeLimitOptions,
  FakeOfferedTool,
  FakeRunRequest,
  FakeToolCallSpec,
  FakeToolContent,
  FakeToolResult,
  FakeUsage,
  FakeWebFetchSpec,
  FakeWebReference,
  FakeWebSearchSpec,
  RunContext,
  Scenario,
  ToolBatchOptions,
} from './run-context.js';
export { FakeExecAbortedError, FakeStreamClosedError } from './run-context.js';
export type { CursorSdk, SdkTestEnv } from './sdk-test-env.js';
export { startSdkTestEnv } from './sdk-test-env.js';
export type { ProtoMessage, ProtoMessageType, ProtoRegistry } from './sdk-proto-registry.js';
export { ensurePatchedSdkCopy, loadSdkProtoRegistry, PATCHED_SDK_VERSION } from './sdk-proto-registry.js';
export { describeImage, sniffImageType } from './received-images.js';
export type { FakeReceivedImage, ImageDescription } from './received-images.js';
