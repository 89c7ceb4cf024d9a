/**
 * One client conversation and the Cursor agent that serves it. A session is busy while a client response
 * streams; between responses its run may stay parked on host tool calls.
 */

import type { UpstreamRun, UpstreamSession } from '../upstream/upstream-port.js';
import { createSessionKey } from '../workspace/session-key.js';

export class Session {
  /** 32 hex chars; names the scratch workspace. Opaque, never derived from conversation text. */
  readonly key = createSessionKey();
  upstream: UpstreamSession | undefined;
  run: UpstreamRun | undefined;
  /** Digests of the transcript the agent holds, or undefined when unknown. */
  committed: string[] | undefined;
  parkedToolCallIds: string[] = [];
  /** The tool names the current run was started with (see the engine's `toolNamesKey`). */
  runToolNames: string | undefined;
  interrupted = false;
  /** What the agent held before the current run started, restored when that run is cut short. */
  committedBeforeRun: string[] | undefined;
  busy = false;
  /** Turns admitted and not yet answered (model lookup and agent creation included). */
  admittedTurns = 0;
  lastUsedAt = Date.now();
  /** The client's session header value of the turn that created it (a drain admits its side calls). */
  nativeSessionId: string | undefined;
  readonly #idleWaiters = new Set<() => void>();
  /** The scratch workspace and host root used by the current run. */
  workspaceDir = '';
  hostRoot: string | undefined;
  #parkDeadline: NodeJS.Timeout | undefined;

  /** True when eviction would lose work: a live stream, a running run or parked tools. */
  get inFlight(): boolean {
    return this.admittedTurns > 0 || this.busy || this.parkedToolCallIds.length > 0 || this.run !== undefined;
  }

  /**
   * Claim the session for one streaming turn: resolves true once it is claimed (at once when idle), false
   * after `timeoutMs`. The claim is taken synchronously when the session is free, so two turns can never
   * both pass; `release()` hands it to one waiter at a time.
   */
  async acquire(timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    while (this.busy) {
      const remaining = deadline - Date.now();
      if (remaining <= 0) return false;
      await new Promise<void>((resolve) => {
        const wake = (): void => {
          clearTimeout(timer);
          this.#idleWaiters.delete(wake);
          resolve();
        };
        const timer = setTimeout(wake, remaining);
        timer.unref();
        this.#idleWaiters.add(wake);
      });
    }
    this.busy = true;
    return true;
  }

  /** The streaming turn ended: wake one waiter, which claims the session if it is still free. */
  release(): void {
    this.busy = false;
    this.lastUsedAt = Date.now();
    const [next] = this.#idleWaiters;
    next?.();
  }

  /** The parked call ids, when the run still waits for all of them; empty when the run has died. */
  liveParkedToolCallIds(): string[] {
    if (this.run === undefined || this.parkedToolCallIds.length === 0) return [];
    const pending = new Set(this.run.pendingToolCalls());
    return this.parkedToolCallIds.every((id) => pending.has(id)) ? this.parkedToolCallIds : [];
  }

  /** Cancel a parked run if the client never comes back. */
  armParkDeadline(ms: number, onExpire: () => void): void {
    this.clearParkDeadline();
    this.#parkDeadline = setTimeout(onExpire, ms);
    this.#parkDeadline.unref();
  }

  clearParkDeadline(): void {
    if (this.#parkDeadline) clearTimeout(this.#parkDeadline);
    this.#parkDeadline = undefined;
  }

  /** Cancel the run (settling its parked calls) and forget it; bounded so a stuck SDK cannot hang us. */
  async retireRun(timeoutMs: number): Promise<void> {
    this.clearParkDeadline();
    const run = this.run;
    this.run = undefined;
    this.parkedToolCallIds = [];
    if (run === undefined) return;
    await Promise.race([run.cancel(), new Promise((resolve) => setTimeout(resolve, timeoutMs).unref())]);
  }

  /** Retire the run and release the agent. */
  async dispose(timeoutMs: number): Promise<void> {
    await this.retireRun(timeoutMs);
    const upstream = this.upstream;
    this.upstream = undefined;
    this.committed = undefined;
    if (upstream !== undefined) {
      await Promise.race([
        upstream.dispose(),
        new Promise((resolve) => setTimeout(resolve, timeoutMs).unref()),
      ]);
    }
  }
}
