/**
 * The engine's sessions: admission (identity lookup, LRU order), eviction (LRU cap, idle TTL) and
 * disposal (agent, identity index entry, scratch-path guard, workspace). A session is protected from
 * eviction while it is in flight: a turn admitted and not yet answered, or a run running or parked.
 */

import type { Logger } from 'pino';
import { BridgeError, createTurnError } from '../turn/turn-error.js';
import type { TurnRequest } from '../turn/turn-request.js';
import type { ToolCallGuard, WorkspacePort } from './engine-deps.js';
import { Session, type OnAgentAbandoned } from './session.js';
import { computeIdentity } from './identity/conversation-identity.js';
import { IdentityIndex } from './identity/identity-index.js';

export type SessionRegistryOptions = {
  maxSessions: number;
  idleTtlMs: number;
  /** Bound on retiring a session's run or agent. */
  retireTimeoutMs: number;
  guard: ToolCallGuard;
  workspace: WorkspacePort;
  logger: Logger;
  /** Called for each session evicted by the cap or the TTL. */
  onEvicted?: (session: Session) => void;
  /** Called once for each agent abandoned because its run would not retire (see {@link Session.retireRun}). */
  onAgentAbandoned?: (session: Session, abandoned: Parameters<OnAgentAbandoned>[0]) => void;
  /** Called once a session is gone (evicted, forgotten or closed), before its disposal is awaited. */
  onForgotten?: (session: Session) => void;
  /** Clock, for tests. */
  now?: () => number;
};

/** One admitted turn; `release()` it exactly once, however the response ends. */
export type Admission = { session: Session; created: boolean; release: () => void };

/** `nativeSessionId`: the client's session header value of the turn that created it (see `drain`). */
type Entry = { session: Session; admitted: number; lastUsedAt: number; nativeSessionId: string | undefined };

export class SessionRegistry {
  readonly #options: SessionRegistryOptions;
  readonly #now: () => number;
  /** Most recently used last: the Map's order is the LRU order. */
  readonly #entries = new Map<string, Entry>();
  readonly #index = new IdentityIndex();
  #draining = false;

  constructor(options: SessionRegistryOptions) {
    this.#options = options;
    this.#now = options.now ?? Date.now;
  }

  get size(): number {
    return this.#entries.size;
  }

  /** Sessions that eviction would lose work of. */
  get inFlight(): number {
    let count = 0;
    for (const entry of this.#entries.values()) if (this.#inFlight(entry)) count += 1;
    return count;
  }

  /**
   * Sessions with a turn in progress: admitted, or with a run streaming. A session parked on host tool calls
   * waits on its client, not on this process.
   */
  get busy(): number {
    let count = 0;
    for (const entry of this.#entries.values())
      if (entry.admitted > 0 || entry.session.state.kind === 'running') count += 1;
    return count;
  }

  /** Every live session with when it was last used (epoch ms), least recently used first. */
  *sessions(): Generator<{ session: Session; lastUsedAt: number }> {
    for (const entry of this.#entries.values())
      yield { session: entry.session, lastUsedAt: entry.lastUsedAt };
  }

  /** Host tool calls parked across every session. */
  get parkedCalls(): number {
    let count = 0;
    for (const entry of this.#entries.values()) count += entry.session.parkedCalls;
    return count;
  }

  /**
   * From now on a turn that resolves to a new conversation is refused with a retryable `unavailable`
   * error (`retry-after` 2 s: a load balancer has taken this process out of rotation by then), while
   * turns of live conversations — and new sessions under the session id of one in flight, its side calls
   * such as a Claude Code Task its parked call waits for — are still admitted.
   */
  startDraining(): void {
    this.#draining = true;
  }

  /**
   * Whether a request that starts no conversation of its own (a search side call) is refused: while
   * draining, unless it is made for a conversation in flight here (its session id names one).
   */
  refusesSideCall(request: TurnRequest): boolean {
    return this.#draining && !this.#hasLiveConversation(request.identity.nativeSessionId?.value);
  }

  /**
   * Find or create the request's session and admit the turn synchronously, so a retry arriving while
   * this turn still resolves its model or creates its agent counts as "still running". The admitted
   * session is in flight, so its own arrival cannot evict it.
   */
  admit(request: TurnRequest): Admission {
    const identity = computeIdentity(request);
    const resolution = this.#index.resolve(identity, this.#now());
    const existing = resolution.kind === 'existing' ? this.#entries.get(resolution.sessionId) : undefined;
    const nativeSessionId = request.identity.nativeSessionId?.value;
    if (existing === undefined && this.#draining && !this.#hasLiveConversation(nativeSessionId)) {
      const message = 'This bridge process is draining and takes no new conversations; retry.';
      throw new BridgeError(createTurnError('unavailable', message, { retryAfterSeconds: 2 }));
    }
    const entry = existing ?? {
      session: this.#createSession(),
      admitted: 0,
      lastUsedAt: this.#now(),
      nativeSessionId,
    };
    const { session } = entry;
    entry.admitted += 1;
    entry.lastUsedAt = this.#now();
    this.#entries.delete(session.key);
    this.#entries.set(session.key, entry);
    if (existing === undefined) this.#evictOverflow();
    this.#index.admit(session.key, identity);
    this.#options.logger.debug(
      { session: session.key, identity: resolution.kind, reason: resolution.reason },
      'admitted turn',
    );
    let admitted = true;
    const release = (): void => {
      if (!admitted) return;
      admitted = false;
      entry.admitted -= 1;
      entry.lastUsedAt = this.#now();
      this.#index.turnFinished(session.key, this.#now());
      // Sessions admitted while every slot was in flight are over the cap until turns end.
      this.#evictOverflow();
    };
    return { session, created: existing === undefined, release };
  }

  /**
   * Drop a session that never got an agent and has no admitted turn (a request refused before it ran),
   * so it does not take an LRU slot from a conversation with history. Returns whether it was dropped.
   */
  forgetUnused(session: Session): boolean {
    const entry = this.#entries.get(session.key);
    if (entry === undefined || entry.admitted > 0 || session.agent !== undefined) return false;
    this.#entries.delete(session.key);
    this.#index.forget(session.key);
    this.#options.guard.forget(session.key);
    this.#options.onForgotten?.(session);
    return true;
  }

  /** Evict every session idle for the TTL (never one in flight). */
  async evictIdle(): Promise<void> {
    const now = this.#now();
    const idle = [...this.#entries.values()].filter(
      (entry) => !this.#inFlight(entry) && now - entry.lastUsedAt >= this.#options.idleTtlMs,
    );
    await Promise.all(idle.map((entry) => this.#evict(entry, 'idle')));
  }

  /** Dispose every session. */
  async close(): Promise<void> {
    const entries = [...this.#entries.values()];
    this.#entries.clear();
    await Promise.all(entries.map((entry) => this.#dispose(entry.session)));
  }

  #createSession(): Session {
    const session: Session = new Session(this.#options.retireTimeoutMs, (abandoned) =>
      this.#options.onAgentAbandoned?.(session, abandoned),
    );
    return session;
  }

  #hasLiveConversation(nativeSessionId: string | undefined): boolean {
    if (nativeSessionId === undefined) return false;
    for (const entry of this.#entries.values())
      if (entry.nativeSessionId === nativeSessionId && this.#inFlight(entry)) return true;
    return false;
  }

  #inFlight(entry: Entry): boolean {
    return entry.admitted > 0 || entry.session.state.kind !== 'idle';
  }

  #evictOverflow(): void {
    for (const entry of this.#entries.values()) {
      if (this.#entries.size <= this.#options.maxSessions) return;
      if (!this.#inFlight(entry)) void this.#evict(entry, 'cap');
    }
  }

  async #evict(entry: Entry, reason: 'cap' | 'idle'): Promise<void> {
    if (!this.#entries.delete(entry.session.key)) return;
    const { session } = entry;
    // A conversation with history loses its agent: its next turn replays in full. An operator seeing
    // this on every turn needs a larger cap (`cursorMaxSessions`); an unused session is not news.
    if (session.agent !== undefined)
      this.#options.logger.info(
        {
          session: session.key,
          reason,
          maxSessions: this.#options.maxSessions,
          idleMs: this.#now() - entry.lastUsedAt,
        },
        reason === 'cap'
          ? 'evicted the least recently used conversation: the session cap is reached'
          : 'evicted an idle conversation',
      );
    this.#options.onEvicted?.(session);
    await this.#dispose(entry.session);
  }

  /**
   * Dispose the agent, then forget the session everywhere and remove its workspace (whatever ended the
   * session: eviction or close); failures are logged, never thrown.
   */
  async #dispose(session: Session): Promise<void> {
    this.#index.forget(session.key);
    this.#options.onForgotten?.(session);
    await session.dispose().catch((error: unknown) => {
      this.#options.logger.warn({ err: error, session: session.key }, 'could not dispose a session');
    });
    this.#options.guard.forget(session.key);
    await this.#options.workspace.remove(session.key).catch((error: unknown) => {
      this.#options.logger.warn({ err: error, session: session.key }, 'could not remove workspace');
    });
  }
}
