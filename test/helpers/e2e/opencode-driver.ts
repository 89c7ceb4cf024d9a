/**
 * OpenCode (`opencode run`) against the bridge's Chat Completions route through its bundled
 * `@ai-sdk/openai-compatible` provider. The prompt goes in on stdin: `opencode run "two words"` wraps an
 * argument with spaces in literal quotes. `small_model` keeps the title request on the bridge. Every run
 * resolves the npm registry host whatever the flags say; the network namespace makes that fail locally.
 */

import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { e2eApiKey, parseJsonLines, type ClientDriver } from './client-driver.js';

export const opencodeModel = 'e2e-model';

/**
 * OpenCode with a given AI SDK provider package: `@ai-sdk/openai-compatible` speaks Chat Completions,
 * `@ai-sdk/openai` the Responses API (system prompt as a `system` input item, tool history without ids).
 */
const createOpencodeDriver = (provider: '@ai-sdk/openai-compatible' | '@ai-sdk/openai'): ClientDriver => ({
  name: 'opencode',
  protocol: provider === '@ai-sdk/openai' ? 'openai-responses' : 'openai-chat',
  shell: { name: 'bash', input: (command) => ({ command }) },
  configure: async (sandbox, endpoint) => {
    const dir = join(sandbox.home, '.config', 'opencode');
    await mkdir(dir, { recursive: true });
    const config = {
      $schema: 'https://opencode.ai/config.json',
      autoupdate: false,
      share: 'disabled',
      model: `bridge/${opencodeModel}`,
      small_model: `bridge/${opencodeModel}`,
      provider: {
        bridge: {
          npm: provider,
          name: 'cursor-bridge e2e',
          options: { baseURL: `${endpoint.baseUrl}/v1`, apiKey: e2eApiKey },
          models: {
            [opencodeModel]: {
              name: 'E2E model',
              tool_call: true,
              // As a user declares a model that sees images: without it OpenCode sends the model an error
              // ("this model does not support image input") in place of an attached image.
              attachment: true,
              modalities: { input: ['text', 'image'], output: ['text'] },
              limit: { context: 200_000, output: 8_192 },
            },
          },
        },
      },
    };
    await writeFile(join(dir, 'opencode.json'), `${JSON.stringify(config, null, 2)}\n`);
  },
  invocation: (_target, prompt, options = {}) => ({
    args: [
      'run',
      '--format',
      'json',
      '--print-logs',
      '--log-level',
      'INFO',
      ...(options.resume === true ? ['--continue'] : []),
      ...(options.verbose === true ? ['--thinking'] : []),
      ...(options.images ?? []).flatMap((path) => ['--file', path]),
    ],
    env: {
      OPENCODE_DISABLE_AUTOUPDATE: '1',
      OPENCODE_DISABLE_MODELS_FETCH: '1',
      OPENCODE_DISABLE_DEFAULT_PLUGINS: '1',
      OPENCODE_DISABLE_LSP_DOWNLOAD: '1',
      OPENCODE_DISABLE_SHARE: '1',
    },
    stdin: prompt,
  }),
});

/** OpenCode over Chat Completions (its usual setup for a custom provider). */
export const opencodeDriver = createOpencodeDriver('@ai-sdk/openai-compatible');

/** OpenCode over the Responses API: a second Responses client besides Codex. */
export const opencodeResponsesDriver = createOpencodeDriver('@ai-sdk/openai');

type OpencodePart = { type?: string; text?: string; tool?: string; state?: Record<string, unknown> };

const parts = (stdout: string): OpencodePart[] =>
  parseJsonLines(stdout).flatMap((event) => {
    const part = event['part'];
    return typeof part === 'object' && part !== null ? [part as OpencodePart] : [];
  });

/** The assistant's text of a `--format json` run, joined. */
export const opencodeText = (stdout: string): string =>
  parts(stdout)
    .filter((part) => part.type === 'text')
    .map((part) => part.text ?? '')
    .join('\n');

/** The reasoning parts' texts of a `--thinking --format json` run. */
export const opencodeReasoning = (stdout: string): string[] =>
  parts(stdout)
    .filter((part) => part.type === 'reasoning')
    .map((part) => part.text ?? '');

/** The tool parts of a `--format json` run: tool name, status, input and output. */
export const opencodeToolUses = (
  stdout: string,
): Array<{ tool: string | undefined; status: unknown; input: unknown; output: unknown }> =>
  parts(stdout)
    .filter((part) => part.type === 'tool')
    .map((part) => ({
      tool: part.tool,
      status: part.state?.['status'],
      input: part.state?.['input'],
      output: part.state?.['output'],
    }));
