/**
 * Waits for a parked call on behalf of one MCP `tools/call` request, honouring the request's lifecycle:
 * the peer's `notifications/cancelled` (or a closed transport) aborts `extra.signal`, and a peer that
 * sent a `progressToken` can be kept from timing out with periodic `notifications/progress`.
 */

import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type { ServerNotification, ServerRequest } from '@modelcontextprotocol/sdk/types.js';
import { MAX_TIMER_DELAY_MS } from './parked-call-broker.js';
import { createErrorResult } from './tool-call-result.js';
import type { ToolCallResult } from './tool-call-result.js';

export type ToolRequestExtra = RequestHandlerExtra<ServerRequest, ServerNotification>;

/** Progress the tool host reported for a parked call (MCP `notifications/progress` params). */
export type HostProgress = { progress: number; total?: number | undefined; message?: string | undefined };

export type WaitOptions = {
  /** Runs once if the request is aborted before the call settles. */
  onAbort: () => void;
  /** Send `notifications/progress` this often while waiting, when the request has a progress token. */
  progressIntervalMs?: number | undefined;
  /**
   * Subscribes to the host's progress for this call (returns an unsubscribe). Each report reaches a peer
   * that sent a progress token as one more `notifications/progress`, the host's figures in its message.
   */
  subscribeProgress?: ((listener: (progress: HostProgress) => void) => () => void) | undefined;
};

/** Resolves with the parked call's result, or with an `isError` result once the request is aborted. */
export function waitForParkedResult(
  parked: Promise<ToolCallResult>,
  extra: ToolRequestExtra,
  options: WaitOptions,
): Promise<ToolCallResult> {
  const { signal } = extra;
  return new Promise((resolve) => {
    const progress = startProgress(extra, options);
    const finish = (result: ToolCallResult): void => {
      progress.stop();
      signal.removeEventListener('abort', abort);
      resolve(result);
    };
    const abort = (): void => {
      options.onAbort();
      finish(createErrorResult('The tool call was cancelled by the MCP client.'));
    };
    if (signal.aborted) return abort();
    signal.addEventListener('abort', abort, { once: true });
    void parked.then(finish);
  });
}

/**
 * The peer's progress stream: a heartbeat, and the host's own reports. One counter serves both, since MCP
 * requires `progress` to increase; the host's figures (which restart per call) travel in the message.
 */
function startProgress(extra: ToolRequestExtra, options: WaitOptions): { stop(): void } {
  const progressToken = extra._meta?.progressToken;
  if (progressToken === undefined) return { stop: () => {} };
  let progress = 0;
  const send = (message: string): void => {
    progress += 1;
    const params = { progressToken, progress, message };
    // sendNotification is a no-op once the request is aborted; a failed send only loses one beat.
    extra.sendNotification({ method: 'notifications/progress', params }).catch(() => {});
  };
  const intervalMs = options.progressIntervalMs;
  const timer =
    intervalMs !== undefined && intervalMs > 0
      ? setInterval(() => send('Waiting for the tool host'), Math.min(intervalMs, MAX_TIMER_DELAY_MS))
      : undefined;
  timer?.unref();
  const unsubscribe = options.subscribeProgress?.((report) => {
    const figures = report.total === undefined ? `${report.progress}` : `${report.progress}/${report.total}`;
    send(report.message === undefined ? `Tool host progress: ${figures}` : `${report.message} (${figures})`);
    timer?.refresh();
  });
  return {
    stop: () => {
      clearInterval(timer);
      unsubscribe?.();
    },
  };
}
