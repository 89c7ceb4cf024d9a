/**
 * What the engine calls per turn: read the host facts from every text of the request, bring the
 * session's workspace up to date, and render the prompt grounding — plus removal on dispose. The CLI
 * builds it from a {@link WorkspaceManager} and a {@link PromptGrounding} sharing one template store.
 */

import { randomBytes } from 'node:crypto';
import type { TurnRequest } from '../turn/turn-request.js';
import { collectHostFactTexts, extractHostFacts, type HostFacts } from './host-facts.js';
import type { PromptGrounding } from './prompt-grounding.js';
import type { WarmWorkspacePool } from './warm-workspace-pool.js';
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

/**
 * What one session's latest turn was grounded with: the prompt's head and tail as rendered, and the facts
 * and workspace they were rendered for. No conversation text.
 */
export type SessionGrounding = {
  sessionKey: string;
  /** When the turn was prepared (ms since the epoch). */
  preparedAt: number;
  workspaceDir: string;
  facts: HostFacts | undefined;
  grounding: { head: string; tail: string };
};

export class WorkspaceService {
  readonly #manager: WorkspaceManager;
  readonly #grounding: PromptGrounding;
  readonly #pool: WarmWorkspacePool | undefined;
  /** Executor leases of adopted warm workspaces, released when their session's workspace is removed. */
  readonly #leases = new Map<string, () => Promise<void>>();
  /**
   * The latest turn's grounding per session, for the live preview: one entry per session with a
   * workspace (bounded as the sessions are), replaced each turn and dropped by {@link remove}.
   */
  readonly #latest = new Map<string, SessionGrounding>();

  /** With a `pool`, a session's first turn adopts a pre-warmed workspace rendered for its facts. */
  constructor(manager: WorkspaceManager, grounding: PromptGrounding, pool?: WarmWorkspacePool) {
    this.#manager = manager;
    this.#grounding = grounding;
    this.#pool = pool;
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
    const claimed =
      this.#pool === undefined || this.#manager.isLive(sessionKey)
        ? undefined
        : this.#pool.claim(this.#manager.renderKey(facts), facts);
    // The entry being warmed for these facts right now: the rest of its warm-up is the shorter wait.
    const warm = claimed !== undefined && 'warming' in claimed ? await claimed.warming : claimed;
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
      else this.#leases.set(sessionKey, warm.release);
    }
    const workspaceDir = ensured.dir;
    const options = { scratchDir: workspaceDir };
    const grounding = {
      head: this.#grounding.renderPromptHead(facts, options),
      tail: this.#grounding.renderPromptTail(facts, options),
    };
    // A removal that overtook this turn left no workspace: nothing to keep for it.
    if (this.#manager.isLive(sessionKey)) {
      this.#latest.set(sessionKey, { sessionKey, preparedAt: Date.now(), workspaceDir, facts, grounding });
    }
    return {
      workspaceDir,
      grounding,
      ...(facts?.root === undefined ? {} : { hostRoot: facts.root }),
      facts,
    };
  }

  /**
   * A scratch directory for a one-off agent that loads no project settings and uses no local tool (a
   * search side call): made under a fresh key, never taken from the warm pool (its executor would not
   * fit) and not listed among the sessions' grounding; `release` removes it.
   */
  async scratch(): Promise<{ workspaceDir: string; release: () => Promise<void> }> {
    const key = randomBytes(16).toString('hex');
    const workspaceDir = await this.#manager.ensureWorkspace(key, undefined);
    return {
      workspaceDir,
      release: async () => {
        await this.#manager.removeWorkspace(key);
      },
    };
  }

  /** The grounding of each live session's latest turn (see {@link SessionGrounding}), in no set order. */
  latestGrounding(): SessionGrounding[] {
    return [...this.#latest.values()];
  }

  /**
   * Remove the session's workspace (only ever a session-key directory directly under the root), release
   * the executor lease it adopted from the pool, if any, and forget its latest grounding. Nothing of it
   * is kept for another session: the pool warms fresh workspaces of its own.
   */
  async remove(sessionKey: string): Promise<void> {
    const release = this.#leases.get(sessionKey);
    this.#leases.delete(sessionKey);
    try {
      await release?.();
    } finally {
      // Forgotten once the workspace is gone: a turn prepared meanwhile then finds it not live.
      await this.#manager.removeWorkspace(sessionKey).finally(() => this.#latest.delete(sessionKey));
      this.#pool?.executorReleased();
    }
  }
}
