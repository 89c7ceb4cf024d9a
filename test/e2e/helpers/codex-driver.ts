/**
 * Codex CLI (`codex exec`) against the bridge's Responses route, with a custom model provider in
 * `$CODEX_HOME/config.toml`. Offline settings from facts/clients.md: no update check, `plugins = false`
 * (else it contacts github.com and chatgpt.com at startup), `analytics.enabled = false` (else a ~5 s
 * hang at exit). The known slug `gpt-5.5` gives production-like requests.
 */

import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { e2eApiKey, parseJsonLines, type ClientDriver } from './client-driver.js';

const codexHome = (home: string): string => join(home, '.codex');

export const codexDriver: ClientDriver = {
  name: 'codex',
  protocol: 'openai-responses',
  shell: { name: 'exec_command', input: (command) => ({ cmd: command }) },
  configure: async (sandbox, endpoint) => {
    await mkdir(codexHome(sandbox.home), { recursive: true });
    await writeFile(
      join(codexHome(sandbox.home), 'config.toml'),
      [
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
        `base_url = "${endpoint.baseUrl}/v1"`,
        'wire_api = "responses"',
        'env_key = "BRIDGE_API_KEY"',
        '',
      ].join('\n'),
    );
  },
  invocation: ({ sandbox }, prompt, options = {}) => ({
    args: [
      'exec',
      ...(options.resume === true ? ['resume', '--last'] : []),
      '--skip-git-repo-check',
      ...(options.allowWrites === true ? ['--sandbox', 'workspace-write'] : []),
      '--json',
      prompt,
    ],
    env: { CODEX_HOME: codexHome(sandbox.home), BRIDGE_API_KEY: e2eApiKey, RUST_LOG: 'warn' },
  }),
};

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
