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

export type WaitOptions = {
  /** Runs once if the request is aborted before the call settles. */
  onAbort: () => void;
  /** Send `notifications/progress` this often while waiting, when the request has a progress token. */
  progressIntervalMs?: number | undefined;
};

/** Resolves with the parked call's result, or with an `isError` result once the request is aborted. */
export function waitForParkedResult(
  parked: Promise<ToolCallResult>,
  extra: ToolRequestExtra,
  options: WaitOptions,
): Promise<ToolCallResult> {
  const { signal } = extra;
  return new Promise((resolve) => {
    const heartbeat = startProgressHeartbeat(extra, options.progressIntervalMs);
    const finish = (result: ToolCallResult): void => {
      clearInterval(heartbeat);
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

function startProgressHeartbeat(
  extra: ToolRequestExtra,
  intervalMs: number | undefined,
): NodeJS.Timeout | undefined {
  const progressToken = extra._meta?.progressToken;
  if (progressToken === undefined || intervalMs === undefined || !(intervalMs > 0)) return undefined;
  let progress = 0;
  const timer = setInterval(
    () => {
      progress += 1;
      const params = { progressToken, progress, message: 'Waiting for the tool host' };
      // sendNotification is a no-op once the request is aborted; a failed send only loses one beat.
      extra.sendNotification({ method: 'notifications/progress', params }).catch(() => {});
    },
    Math.min(intervalMs, MAX_TIMER_DELAY_MS),
  );
  timer.unref();
  return timer;
}
