/**
 * One {@link ScratchPathGuard} per session, behind the narrow interface the engine calls for every host
 * tool call (`check`), once per client response (`endTurn`) and on dispose (`forget`).
 */

import type { Logger } from 'pino';
import { ScratchPathGuard, type ScratchPathCheck, type ScratchPathMetrics } from './scratch-path.js';

export type ScratchPathGuardsOptions = {
  /**
   * The directory whose paths must not reach the client. Default: each call's `workspaceDir`. Pass the
   * workspace root to also catch paths into other sessions' workspaces.
   */
  scratchRoot?: string;
  logger: Logger;
  /** Corrections per session. Default 3. */
  maxCorrections?: number;
  /** The home directory `~` and `$HOME` stand for in a call's arguments. Default: this process's home. */
  homeDir?: string;
  /** Called for every violation (`corrected`: answered with a correction), e.g. to count it. */
  onViolation?: (corrected: boolean) => void;
};

export class ScratchPathGuards {
  readonly #options: ScratchPathGuardsOptions;
  readonly #guards = new Map<string, ScratchPathGuard>();

  constructor(options: ScratchPathGuardsOptions) {
    this.#options = options;
  }

  /** Check one host tool call of `sessionKey` against the turn's host root. */
  check(
    sessionKey: string,
    call: { toolCallId: string; toolName: string; input: unknown },
    context: { workspaceDir: string; hostRoot?: string },
  ): ScratchPathCheck {
    let guard = this.#guards.get(sessionKey);
    if (guard === undefined) {
      guard = new ScratchPathGuard({
        scratchRoot: this.#options.scratchRoot ?? context.workspaceDir,
        logger: this.#options.logger.child({ session: sessionKey }),
        ...(this.#options.maxCorrections === undefined
          ? {}
          : { maxCorrections: this.#options.maxCorrections }),
        ...(this.#options.homeDir === undefined ? {} : { homeDir: this.#options.homeDir }),
      });
      this.#guards.set(sessionKey, guard);
    }
    const check = guard.check(call, context.hostRoot);
    if (check.violation !== undefined) this.#options.onViolation?.(!check.forward);
    return check;
  }

  /** Log the turn summary for `sessionKey` when its turn produced scratch paths. */
  endTurn(sessionKey: string): void {
    this.#guards.get(sessionKey)?.summarizeTurn();
  }

  /** Drop the session's guard and counters. */
  forget(sessionKey: string): void {
    this.#guards.delete(sessionKey);
  }

  /** The session's counters, or `undefined` when it made no checked call yet. */
  metrics(sessionKey: string): ScratchPathMetrics | undefined {
    return this.#guards.get(sessionKey)?.metrics;
  }
}
