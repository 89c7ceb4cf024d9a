/**
 * Claude Code (`claude -p`) against the bridge's Anthropic Messages route. Offline settings:
 * `DISABLE_TELEMETRY` and `CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC` stop every lookup of Anthropic's hosts;
 * `--allowedTools Bash` lets the scripted commands run without a prompt.
 */

import { readFileSync } from 'node:fs';
import { extname } from 'node:path';

import { e2eApiKey, parseJsonLines, type ClientDriver } from './client-driver.js';

export const claudeCodeDriver: ClientDriver = {
  name: 'claude-code',
  protocol: 'anthropic',
  shell: {
    name: 'Bash',
    input: (command) => ({ command, description: 'Run the e2e command' }),
  },
  configure: async () => {},
  invocation: ({ endpoint }, prompt, options = {}) => ({
    args: [
      '-p',
      // With images the prompt is a stream-json user message on stdin, as an SDK host pastes one.
      ...(options.images === undefined
        ? [prompt, '--output-format', ...(options.verbose === true ? ['stream-json', '--verbose'] : ['json'])]
        : ['--input-format', 'stream-json', '--output-format', 'stream-json', '--verbose']),
      '--allowedTools',
      'Bash',
      ...(options.resume === true ? ['--continue'] : []),
      ...(options.model === undefined ? [] : ['--model', options.model]),
    ],
    env: {
      ANTHROPIC_BASE_URL: endpoint.baseUrl,
      ANTHROPIC_API_KEY: e2eApiKey,
      DISABLE_TELEMETRY: '1',
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
      DISABLE_AUTOUPDATER: '1',
    },
    ...(options.images === undefined ? {} : { stdin: streamJsonUserMessage(prompt, options.images) }),
  }),
};

/** One `--input-format stream-json` user message: the prompt, then each image file as a base64 image block. */
const streamJsonUserMessage = (prompt: string, images: readonly string[]): string =>
  `${JSON.stringify({
    type: 'user',
    message: {
      role: 'user',
      content: [
        { type: 'text', text: prompt },
        ...images.map((path) => ({
          type: 'image',
          source: {
            type: 'base64',
            media_type: imageMediaType(path),
            data: readFileSync(path).toString('base64'),
          },
        })),
      ],
    },
  })}\n`;

const imageMediaType = (path: string): string => {
  const extension = extname(path).toLowerCase();
  if (extension === '.jpg' || extension === '.jpeg') return 'image/jpeg';
  return `image/${extension.slice(1)}`;
};

/** The `--output-format json` result object: `{ type: "result", is_error, result, session_id, … }`. */
export type ClaudeCodeResult = {
  type: string;
  subtype?: string;
  is_error?: boolean;
  result?: string;
  session_id?: string;
  num_turns?: number;
};

/** The result line of a `--output-format json` (or stream-json) run, if any. */
export const claudeCodeResult = (stdout: string): ClaudeCodeResult | undefined =>
  parseJsonLines(stdout)
    .filter((line) => line['type'] === 'result')
    .at(-1) as ClaudeCodeResult | undefined;
