/**
 * Scratch-path detection. Grounding is preventive; this is the check: a host tool call whose arguments
 * mention the scratch workspace (anywhere, including inside a shell command such as
 * `cd <workspace> && ls`) is answered with a corrective tool result instead of reaching the client —
 * at most a few times per session, after which calls are forwarded unchanged (a model that keeps
 * insisting may be following an explicit user request about that path).
 */

import { homedir } from 'node:os';
import type { Logger } from 'pino';

/** The first argument that references the scratch root: its JSON path (`command`, `edits[0].file_path`). */
export type ScratchPathViolation = { path: string; value: string };

/** Characters that continue a path segment; a match must not be glued to one on either side. */
const segmentChar = /[A-Za-z0-9._-]/;
const identifier = /^[A-Za-z_$][A-Za-z0-9_$]*$/;
const maxDepth = 64;

const stripTrailingSeparators = (path: string): string => path.replace(/[\\/]+$/, '');

/** The spellings of `root` a model might write: as given, with either separator, with shell-escaped spaces. */
const spellingsOf = (root: string): string[] => {
  const base = stripTrailingSeparators(root);
  if (base === '') return [];
  const spellings = new Set([base, base.replaceAll('\\', '/'), base.replaceAll('/', '\\')]);
  for (const spelling of [...spellings])
    if (spelling.includes(' ')) spellings.add(spelling.replaceAll(' ', '\\ '));
  return [...spellings];
};

/** How a shell (or a tool that expands like one) names the home directory. */
const homePrefixes = ['~', '$HOME', '${HOME}'] as const;

/**
 * The spellings of `root` written relative to `homeDir` (`~/…`, `$HOME/…`, `${HOME}/…`, with either
 * separator), when `root` lies strictly below it; none otherwise — a bare `~` is never the scratch root.
 */
const homeSpellingsOf = (root: string, homeDir: string): string[] => {
  const base = stripTrailingSeparators(root).replaceAll('\\', '/');
  const home = stripTrailingSeparators(homeDir).replaceAll('\\', '/');
  if (home === '' || !base.startsWith(`${home}/`)) return [];
  const relative = base.slice(home.length + 1);
  const spellings = new Set<string>();
  for (const prefix of homePrefixes) {
    for (const separator of ['/', '\\']) {
      const spelling = `${prefix}${separator}${relative.replaceAll('/', separator)}`;
      spellings.add(spelling);
      if (spelling.includes(' ')) spellings.add(spelling.replaceAll(' ', '\\ '));
    }
  }
  return [...spellings];
};

const mentions = (text: string, spellings: readonly string[]): boolean => {
  for (const spelling of spellings) {
    for (let at = text.indexOf(spelling); at !== -1; at = text.indexOf(spelling, at + 1)) {
      const before = text[at - 1];
      const after = text[at + spelling.length];
      if (
        (before === undefined || !segmentChar.test(before)) &&
        (after === undefined || !segmentChar.test(after))
      ) {
        return true;
      }
    }
  }
  return false;
};

/** Whether `path` is `root` or lies below it (separator-agnostic). */
export const isPathWithin = (path: string, root: string): boolean => {
  const child = stripTrailingSeparators(path.replaceAll('\\', '/'));
  const parent = stripTrailingSeparators(root.replaceAll('\\', '/'));
  return parent !== '' && (child === parent || child.startsWith(`${parent}/`));
};

const childPath = (parent: string, key: string): string => {
  if (!identifier.test(key)) return `${parent}[${JSON.stringify(key)}]`;
  return parent === '' ? key : `${parent}.${key}`;
};

const search = (
  value: unknown,
  path: string,
  spellings: readonly string[],
  depth: number,
): ScratchPathViolation | undefined => {
  if (typeof value === 'string') {
    return mentions(value, spellings) ? { path: path === '' ? '$' : path, value } : undefined;
  }
  if (depth >= maxDepth || typeof value !== 'object' || value === null) return undefined;
  if (Array.isArray(value)) {
    for (const [index, item] of value.entries()) {
      const found = search(item, `${path}[${index}]`, spellings, depth + 1);
      if (found !== undefined) return found;
    }
    return undefined;
  }
  for (const [key, item] of Object.entries(value)) {
    const found = search(item, childPath(path, key), spellings, depth + 1);
    if (found !== undefined) return found;
  }
  return undefined;
};

/**
 * The first string in `args` (searched recursively, in key order) that references `scratchRoot`, or
 * `undefined`. Always `undefined` when `hostRoot` lies under `scratchRoot` — then such paths are real.
 * With `homeDir` (the bridge's home, under which the scratch root usually lives) the root written as
 * `~/…`, `$HOME/…` or `${HOME}/…` counts too, in a path argument and inside a shell command alike.
 */
export const findScratchPathViolation = (
  args: unknown,
  scratchRoot: string,
  hostRoot?: string,
  homeDir?: string,
): ScratchPathViolation | undefined => {
  if (hostRoot !== undefined && isPathWithin(hostRoot, scratchRoot)) return undefined;
  const spellings = spellingsOf(scratchRoot);
  if (spellings.length === 0) return undefined;
  if (homeDir !== undefined) spellings.push(...homeSpellingsOf(scratchRoot, homeDir));
  return search(args, '', spellings, 0);
};

const excerpt = (value: string): string => (value.length > 300 ? `${value.slice(0, 300)}…` : value);

/** The tool result the model gets instead of its call: what was wrong and which paths to use. */
export const buildScratchPathCorrection = (
  toolName: string,
  violation: ScratchPathViolation,
  hostRoot?: string,
): string =>
  [
    `The ${toolName} call was not run: its argument \`${violation.path}\` refers to the Cursor scratch workspace`,
    `(${excerpt(violation.value)}).`,
    "That directory is an empty scratch workspace, not the user's project; the tools do not run there.",
    hostRoot === undefined
      ? "Tools run on the user's machine. Retry the call using only absolute host paths that appear in the conversation; never guess a project root."
      : `Tools run on the user's machine, where the project root is ${hostRoot}. Retry the call with host paths under ${hostRoot}.`,
  ].join(' ');

/** Session counters, as reported in the session metrics. */
export type ScratchPathMetrics = { scratchPathViolations: number; scratchPathCorrections: number };

/** `forward: false` means: answer the call with `correction` instead of sending it to the client. */
export type ScratchPathCheck =
  | { forward: true; violation?: ScratchPathViolation }
  | { forward: false; violation: ScratchPathViolation; correction: string };

export type ScratchPathGuardOptions = {
  /** The directory whose paths must not reach the client (the workspace root, or one workspace). */
  scratchRoot: string;
  /** Per-call warnings go here (a session child logger). */
  logger: Logger;
  /** Corrections per session before calls are forwarded unchanged. Default 3. */
  maxCorrections?: number;
  /** The home directory `~` and `$HOME` stand for in a call's arguments. Default: this process's home. */
  homeDir?: string;
};

/** The message of the once-per-turn summary; grep for it to compare model behaviour. */
export const scratchPathSummaryMessage = 'cursor-sdk turn produced scratch-workspace tool paths';

/** Scratch-path checks and counters for one session. */
export class ScratchPathGuard {
  readonly #scratchRoot: string;
  readonly #logger: Logger;
  readonly #maxCorrections: number;
  readonly #homeDir: string;
  readonly #totals: ScratchPathMetrics = { scratchPathViolations: 0, scratchPathCorrections: 0 };
  #turn: ScratchPathMetrics = { scratchPathViolations: 0, scratchPathCorrections: 0 };

  constructor(options: ScratchPathGuardOptions) {
    this.#scratchRoot = options.scratchRoot;
    this.#logger = options.logger;
    this.#maxCorrections = options.maxCorrections ?? 3;
    this.#homeDir = options.homeDir ?? homedir();
  }

  /** Session totals since the guard was created. */
  get metrics(): ScratchPathMetrics {
    return { ...this.#totals };
  }

  /**
   * Check one host tool call against this turn's host root. A violation is counted and logged at warn;
   * it is corrected while the session has corrections left, otherwise forwarded.
   */
  check(
    call: { toolName: string; toolCallId?: string; input: unknown },
    hostRoot?: string,
  ): ScratchPathCheck {
    const violation = findScratchPathViolation(call.input, this.#scratchRoot, hostRoot, this.#homeDir);
    if (violation === undefined) return { forward: true };
    const correct = this.#totals.scratchPathCorrections < this.#maxCorrections;
    this.#totals.scratchPathViolations += 1;
    this.#turn.scratchPathViolations += 1;
    if (correct) {
      this.#totals.scratchPathCorrections += 1;
      this.#turn.scratchPathCorrections += 1;
    }
    this.#logger.warn(
      {
        tool: call.toolName,
        toolCallId: call.toolCallId,
        argument: violation.path,
        value: excerpt(violation.value),
        action: correct ? 'corrected' : 'forwarded',
        ...this.#totals,
      },
      'host tool call references the scratch workspace',
    );
    if (!correct) return { forward: true, violation };
    return {
      forward: false,
      violation,
      correction: buildScratchPathCorrection(call.toolName, violation, hostRoot),
    };
  }

  /** End the turn: when it had violations, log the summary line once; then reset the turn counters. */
  summarizeTurn(logger: Logger = this.#logger): void {
    const turn = this.#turn;
    this.#turn = { scratchPathViolations: 0, scratchPathCorrections: 0 };
    if (turn.scratchPathViolations === 0) return;
    logger.warn(
      {
        ...turn,
        sessionScratchPathViolations: this.#totals.scratchPathViolations,
        sessionScratchPathCorrections: this.#totals.scratchPathCorrections,
      },
      scratchPathSummaryMessage,
    );
  }
}
