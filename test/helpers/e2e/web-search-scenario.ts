/**
 * Claude Code's WebSearch as an e2e scenario, shared by every host that serves Claude Code (serve through
 * `cursor-bridge claude`, CCR 1.x / 2.x, CCR 3): the main conversation loads WebSearch (a deferred tool of
 * Claude Code 2.1.332) with ToolSearch — the bridge re-sends the turn once it is loaded — and calls it;
 * Claude Code runs it by sending its side request, which the fake plays as Cursor's hosted search; the
 * model's last step quotes the tool result Claude Code handed it.
 */

import type { FakeWebReference, FakeWebSearchSpec } from '../../fakes/cursor-backend/index.js';
import { parseJsonLines } from './client-driver.js';
import { quoteToolResults, type ModelScenario } from './model-scenario.js';

export const webSearchQuery = 'node 22 release date';

export const nodeRelease: FakeWebReference = {
  title: 'Node.js 22 is now available!',
  url: 'https://nodejs.org/en/blog/announcements/v22-release-announce',
  chunk: 'Node.js 22 was released on April 24, 2024.',
};

export const nodeSchedule: FakeWebReference = {
  title: 'Node.js release schedule',
  url: 'https://github.com/nodejs/release#release-schedule',
  chunk: 'Node.js 22 entered long-term support in October 2024.',
};

/** The prompt that makes the scenario's model search. */
export const webSearchPrompt = `Search the web for the ${webSearchQuery} and tell me what you found.`;

/** The search side call's answer text (it names the first source). */
export const webSearchAnswer = `Node 22 was released on April 24, 2024 (${nodeRelease.url}).`;

/** The scenario; `outcome` is what Cursor's search returns to the side call. */
export const webSearchScenario = (outcome: FakeWebSearchSpec['outcome']): ModelScenario => ({
  turns: [
    {
      steps: [
        {
          text: 'Loading the search tool.',
          toolCalls: [{ tool: 'ToolSearch', input: { query: 'select:WebSearch', max_results: 1 } }],
        },
        { text: 'Not reached: the turn is re-sent with WebSearch loaded.' },
      ],
    },
    {
      steps: [
        { text: 'Searching the web.', toolCalls: [{ tool: 'WebSearch', input: { query: webSearchQuery } }] },
        { text: (context) => `TOOL RESULT BEGIN\n${quoteToolResults(context)}\nTOOL RESULT END` },
      ],
    },
  ],
  searchSideCall: { searches: [{ query: webSearchQuery, outcome }], answer: webSearchAnswer },
});

/** The WebSearch tool results Claude Code recorded in its `--output-format stream-json --verbose` output. */
export const webSearchToolResults = (stdout: string): Array<Record<string, unknown>> =>
  parseJsonLines(stdout).flatMap((line) => {
    const result = line['tool_use_result'];
    return line['type'] === 'user' && typeof result === 'object' && result !== null && 'searchCount' in result
      ? [result as Record<string, unknown>]
      : [];
  });
