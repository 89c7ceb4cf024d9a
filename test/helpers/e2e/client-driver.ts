/**
 * What the harness needs to know about one real client: which binary, how the model calls its shell
 * tool, how to point it at the bridge offline, and how to run a first or a follow-up turn.
 */

import type { TurnProtocol } from '../../../src/turn/turn-request.js';
import type { ClientName } from './install-clients.js';
import type { ClientEndpoint } from './network-isolation.js';
import type { ClientSandbox } from './run-client.js';
import type { ShellTool } from './model-scenario.js';
import { isRecord } from '../../../lib/is-record.js';

/** The arguments, extra environment and stdin of one client run. */
export type ClientInvocation = {
  args: string[];
  env: Record<string, string>;
  /** Piped to stdin; `/dev/null` when absent. */
  stdin?: string;
};

/** Where a run happens: the client's sandbox and the endpoint that reaches the bridge. */
export type ClientTarget = { sandbox: ClientSandbox; endpoint: ClientEndpoint };

export type TurnOptions = {
  /** Continue the sandbox's latest conversation (`--continue`, `exec resume --last`). */
  resume?: boolean;
  /** The client's most detailed event output (Claude Code: `stream-json --verbose`; OpenCode: `--thinking`). */
  verbose?: boolean;
  /** Let the client's tools write inside the project (Codex: `--sandbox workspace-write`). */
  allowWrites?: boolean;
  /** The model the user picks on the command line (Claude Code: `--model`). */
  model?: string;
  /**
   * Image files (absolute paths inside the sandbox's project) the user attaches to the prompt, as the client's
   * command line does it (Claude Code: an image block in `--input-format stream-json`; Codex: `-i`; OpenCode:
   * `--file`).
   */
  images?: readonly string[];
};

export type ClientDriver = {
  name: ClientName;
  /** The protocol the client speaks to the bridge. */
  protocol: TurnProtocol;
  shell: ShellTool;
  /** Write the client's configuration (pointing at `endpoint`) into the sandbox's HOME. */
  configure(sandbox: ClientSandbox, endpoint: ClientEndpoint): Promise<void>;
  /** A turn with `prompt`. */
  invocation(target: ClientTarget, prompt: string, options?: TurnOptions): ClientInvocation;
  /**
   * The per-run timeout, when the client needs more than the harness's default: a config a user runs
   * as is may make it wait on network timeouts offline (Codex's plugin sync and analytics flush).
   */
  runTimeoutMs?: number;
};

/** The API key every client presents; the bridge has no `APIKEY` configured and does not check it. */
export const e2eApiKey = 'sk-e2e-test';

/** Parse each stdout line that is a JSON object; other lines are skipped. */
export const parseJsonLines = (stdout: string): Array<Record<string, unknown>> =>
  stdout.split('\n').flatMap((line) => {
    const trimmed = line.trim();
    if (!trimmed.startsWith('{')) return [];
    try {
      const value: unknown = JSON.parse(trimmed);
      return isRecord(value) ? [value] : [];
    } catch {
      return [];
    }
  });
