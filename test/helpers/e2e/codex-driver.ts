/**
 * Codex CLI (`codex exec`) against the bridge's Responses route, with a custom model provider in
 * `$CODEX_HOME/config.toml`. Offline settings: no update check, `plugins = false` (else it contacts
 * github.com and chatgpt.com at startup), `analytics.enabled = false` (else a ~5 s hang at exit). The known
 * slug `gpt-5.5` gives production-like requests.
 */

import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { repoRoot } from '../repo-root.js';
import { e2eApiKey, parseJsonLines, type ClientDriver } from './client-driver.js';
import { clientTimeoutMs } from './e2e-harness.js';
import type { ShellTool } from './model-scenario.js';

const codexHome = (home: string): string => join(home, '.codex');

/**
 * Codex's default model works in "code mode": its one way to the shell is the custom tool `exec` of the
 * namespace `functions` (mirrored as `functions__exec`), whose input is JavaScript calling Codex's tools.
 */
export const codeModeShell = (command: string): string =>
  `text((await tools.exec_command({ cmd: ${JSON.stringify(command)} })).output)`;

/**
 * The README's Codex `config.toml` (the commented block under "# Codex (~/.codex/config.toml)" under
 * "Point your client"), read from README.md so the test runs what users copy: trailing comments dropped, the
 * bridge's URL swapped for `baseUrl`; `withModel: false` leaves out its optional `model` line. No key
 * (the e2e bridge checks none unless `APIKEY` is set).
 */
const readmeProviderLines = async (baseUrl: string, withModel: boolean): Promise<string[]> => {
  const readme = (await readFile(join(repoRoot, 'README.md'), 'utf8')).split('\n');
  const start = readme.indexOf('# Codex (~/.codex/config.toml)');
  if (start < 0) throw new Error('README.md has no "# Codex (~/.codex/config.toml)" block');
  const lines: string[] = [];
  for (const line of readme.slice(start + 1)) {
    const match = /^# {3}(\S.*)$/.exec(line);
    if (match?.[1] === undefined) break;
    lines.push(match[1].replace(/\s+#.*$/, ''));
  }
  if (!lines.some((line) => line.startsWith('base_url = ')))
    throw new Error(`README.md's Codex block has no base_url: ${lines.join(' | ')}`);
  return lines
    .filter((line) => withModel || !line.startsWith('model = '))
    .map((line) => (line.startsWith('base_url = ') ? `base_url = "${baseUrl}/v1"` : line));
};

/**
 * A Codex driver writing `lines(baseUrl)` as the whole of `config.toml`. Every run gets `--json` and
 * `--skip-git-repo-check` (the sandbox project is no git repository).
 */
const createCodexDriver = (
  lines: (baseUrl: string) => string[] | Promise<string[]>,
  shell: ShellTool,
): ClientDriver => ({
  name: 'codex',
  protocol: 'openai-responses',
  shell,
  configure: async (sandbox, endpoint) => {
    await mkdir(codexHome(sandbox.home), { recursive: true });
    await writeFile(
      join(codexHome(sandbox.home), 'config.toml'),
      [...(await lines(endpoint.baseUrl)), ''].join('\n'),
    );
  },
  invocation: ({ sandbox }, prompt, options = {}) => ({
    args: [
      'exec',
      ...(options.resume === true ? ['resume', '--last'] : []),
      '--skip-git-repo-check',
      ...(options.allowWrites === true ? ['--sandbox', 'workspace-write'] : []),
      '--json',
      // `-i` takes several files: `--` ends them before the prompt.
      ...(options.images === undefined ? [] : [...options.images.flatMap((path) => ['-i', path]), '--']),
      prompt,
    ],
    env: { CODEX_HOME: codexHome(sandbox.home), BRIDGE_API_KEY: e2eApiKey, RUST_LOG: 'warn' },
  }),
});

/**
 * The known slug `gpt-5.5` (top-level `tools`, with namespace, custom, `tool_search` and `web_search`
 * tools) and the offline settings; the key from `BRIDGE_API_KEY`.
 */
export const codexDriver: ClientDriver = createCodexDriver(
  (baseUrl) => [
    'model = "gpt-5.5"',
    'model_provider = "bridge"',
    'check_for_update_on_startup = false',
    '',
    '[features]',
    'plugins = false',
    '',
    '[analytics]',
    'enabled = false',
    '',
    '[model_providers.bridge]',
    'name = "cursor-bridge e2e"',
    `base_url = "${baseUrl}/v1"`,
    'wire_api = "responses"',
    'env_key = "BRIDGE_API_KEY"',
  ],
  { name: 'exec_command', input: (command) => ({ cmd: command }) },
);

/**
 * The README's Codex config and nothing else, without its optional `model` line: Codex 0.171 runs its own
 * default model and sends its tools only in an `additional_tools` input item; no offline settings, so a
 * run may try the network at startup (the namespace has none) and waits ~5 s at exit for its analytics
 * flush.
 */
export const codexReadmeNoModelDriver: ClientDriver = {
  ...createCodexDriver((baseUrl) => readmeProviderLines(baseUrl, false), {
    name: 'functions__exec',
    input: (command) => ({ input: codeModeShell(command) }),
  }),
  // Offline, the plugin sync waits out its network attempts (5 s each) and the exit its analytics flush.
  runTimeoutMs: 2 * clientTimeoutMs,
};

/** The README's Codex config exactly as written, its `model` line (a Cursor model) included. */
export const codexReadmeDriver: ClientDriver = {
  ...createCodexDriver((baseUrl) => readmeProviderLines(baseUrl, true), {
    name: 'exec_command',
    input: (command) => ({ cmd: command }),
  }),
  runTimeoutMs: 2 * clientTimeoutMs,
};

/**
 * The note the bridge opens a conversation's first answer with when it drops a tool: `codexDriver`'s
 * `gpt-5.5` sends `web_search`, which only OpenAI's servers run.
 */
export const codexWebSearchNote = /^\[cursor-bridge\] Some tools your client offered[^]*web_search tool/;

/** The events of a `codex exec --json` run. */
export type CodexEvent = Record<string, unknown> & { type?: string };

/** The `agent_message` texts of a `--json` run, in order. */
export const codexAgentMessages = (stdout: string): string[] =>
  parseJsonLines(stdout).flatMap((event: CodexEvent) => {
    const item = event['item'] as { type?: string; text?: string } | undefined;
    return event.type === 'item.completed' && item?.type === 'agent_message' && item.text !== undefined
      ? [item.text]
      : [];
  });

/** The `reasoning` items' texts of a `--json` run (Codex shows reasoning summaries). */
export const codexReasoning = (stdout: string): string[] =>
  parseJsonLines(stdout).flatMap((event: CodexEvent) => {
    const item = event['item'] as { type?: string; text?: string } | undefined;
    return event.type === 'item.completed' && item?.type === 'reasoning' ? [item.text ?? ''] : [];
  });

/** The `command_execution` items of a `--json` run. */
export const codexCommands = (stdout: string): Array<{ command?: string; aggregated_output?: string }> =>
  parseJsonLines(stdout).flatMap((event: CodexEvent) => {
    const item = event['item'] as { type?: string; command?: string; aggregated_output?: string } | undefined;
    return event.type === 'item.completed' && item?.type === 'command_execution' ? [item] : [];
  });
