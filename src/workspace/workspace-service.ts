/**
 * What the engine calls per turn: read the host facts from every text of the request, bring the
 * session's workspace up to date, and render the prompt grounding — plus removal on dispose. The CLI
 * builds it from a {@link WorkspaceManager} and a {@link PromptGrounding} sharing one template store.
 */

import type { Logger } from 'pino';
import type { TurnRequest } from '../turn/turn-request.js';
import { collectHostFactTexts, extractHostFacts, type HostFacts } from './host-facts.js';
import type { PromptGrounding } from './prompt-grounding.js';
import type { WarmWorkspace, WarmWorkspacePool } from './warm-workspace-pool.js';
import type { WorkspaceManager } from './workspace-manager.js';

/** The result of {@link WorkspaceService.prepare}. */
export type PreparedTurnWorkspace = {
  /** The scratch directory the agent runs in. */
  workspaceDir: string;
  /** The prompt's grounding head and tail, stating this turn's host facts. */
  grounding: { head: string; tail: string };
  /** The host project root, when the request reported one. */
  hostRoot?: string;
  /** The facts found in this request (undefined: none reported). */
  facts: HostFacts | undefined;
};

/** How a session's workspace goes (see {@link WorkspaceService.remove}). */
export type WorkspaceRemoval = {
  /**
   * The session was evicted and its agent is being disposed: resolves `true` once the agent (and its
   * run) are gone, `false` if that failed or timed out. The workspace waits for it, then may be recycled.
   */
  recycleAfter?: Promise<boolean>;
};

export class WorkspaceService {
  readonly #manager: WorkspaceManager;
  readonly #grounding: PromptGrounding;
  readonly #pool: WarmWorkspacePool | undefined;
  readonly #logger: Logger | undefined;
  /** Executor leases of adopted warm workspaces, released when their session's workspace is removed. */
  readonly #leases = new Map<string, WarmWorkspace>();

  /**
   * With a `pool`, a session's first turn adopts a pre-warmed workspace rendered for its facts, and an
   * evicted session's adopted workspace may go back to the pool.
   */
  constructor(
    manager: WorkspaceManager,
    grounding: PromptGrounding,
    pool?: WarmWorkspacePool,
    logger?: Logger,
  ) {
    this.#manager = manager;
    this.#grounding = grounding;
    this.#pool = pool;
    this.#logger = logger;
  }

  /**
   * Re-read the host facts from the request, ensure the session's workspace (files rewritten only when
   * their bytes change) and render the grounding for this turn.
   */
  async prepare(
    sessionKey: string,
    request: Pick<TurnRequest, 'system' | 'messages'>,
  ): Promise<PreparedTurnWorkspace> {
    const facts = extractHostFacts(collectHostFactTexts(request));
    const warm =
      this.#pool === undefined || this.#manager.isLive(sessionKey)
        ? undefined
        : await this.#pool.claim(this.#manager.renderKey(facts), facts);
    let ensured;
    try {
      ensured = await this.#manager.ensureSessionWorkspace(sessionKey, facts, warm?.key);
    } catch (error) {
      if (warm !== undefined) await this.#pool?.discard(warm);
      throw error;
    }
    if (warm !== undefined) {
      // A rewritten file would not reach the warmed executor (it keeps the rules it loaded): let it go,
      // so the agent's first send builds one over the files as they are.
      if (ensured.changed) await warm.release();
      else this.#leases.set(sessionKey, warm);
    }
    const workspaceDir = ensured.dir;
    const options = { scratchDir: workspaceDir };
    return {
      workspaceDir,
      grounding: {
        head: this.#grounding.renderPromptHead(facts, options),
        tail: this.#grounding.renderPromptTail(facts, options),
      },
      ...(facts?.root === undefined ? {} : { hostRoot: facts.root }),
      facts,
    };
  }

  /**
   * Remove the session's workspace (only ever a session-key directory directly under the root). With
   * `recycleAfter` (an eviction), a workspace adopted from the pool whose key the pool still wants is
   * offered back once the agent is disposed — the directory verified to be exactly a fresh render (see
   * {@link WorkspaceManager.recycleWorkspace}), its executor lease kept — and removed otherwise. The
   * pool learns of the recycle synchronously, so a claim made meanwhile can wait for it.
   */
  async remove(sessionKey: string, removal: WorkspaceRemoval = {}): Promise<void> {
    const lease = this.#leases.get(sessionKey);
    this.#leases.delete(sessionKey);
    const ticket =
      lease === undefined || removal.recycleAfter === undefined
        ? undefined
        : this.#pool?.expectRecycle(lease.renderKey, lease.generation);
    const disposed = (await removal.recycleAfter?.catch(() => false)) ?? true;
    if (ticket !== undefined && lease !== undefined) {
      const reserved = disposed
        ? await this.#manager.recycleWorkspace(sessionKey, lease.renderKey).catch((error: unknown) => {
            this.#logger?.warn({ err: error, session: sessionKey }, 'could not check a workspace to recycle');
            return undefined;
          })
        : undefined;
      if (reserved === undefined) ticket.cancel();
      else if (ticket.offer({ ...reserved, release: lease.release })) return;
      else {
        // The pool's wants changed while the session was disposed: remove it as a reservation.
        try {
          await lease.release();
        } finally {
          await this.#manager.releaseReservation(reserved.key);
        }
        return;
      }
    }
    try {
      await lease?.release();
    } finally {
      await this.#manager.removeWorkspace(sessionKey);
      this.#pool?.executorReleased();
    }
  }
}
