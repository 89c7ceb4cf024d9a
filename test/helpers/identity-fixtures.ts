import type { TurnMessage, TurnProtocol, TurnRequest, TurnUserPart } from '../../src/turn/turn-request.js';

/** A user message; several strings become several text parts (as Claude Code sends reminders + prompt). */
export const user = (...texts: string[]): TurnMessage => ({
  role: 'user',
  content: texts.map((text): TurnUserPart => ({ type: 'text', text })),
});

export const system = (text: string): TurnMessage => ({ role: 'system', content: [{ type: 'text', text }] });

export const assistant = (text: string, callIds: string[] = []): TurnMessage => ({
  role: 'assistant',
  content: [
    ...(text === '' ? [] : [{ type: 'text' as const, text }]),
    ...callIds.map((id) => ({ type: 'tool-call' as const, toolCallId: id, toolName: 'Bash', input: {} })),
  ],
});

export const tool = (id: string, text: string, isError = false): TurnMessage => ({
  role: 'tool',
  toolCallId: id,
  content: [{ type: 'text', text }],
  isError,
});

export type IdentityHint = { native?: string; promptCacheKey?: string; protocol?: TurnProtocol };

export const request = (
  messages: TurnMessage[],
  hint: IdentityHint = {},
  systemText = 'sys',
): TurnRequest => ({
  protocol: hint.protocol ?? 'anthropic',
  model: 'composer-2',
  system: [{ type: 'text', text: systemText }],
  messages,
  tools: [],
  toolChoice: { type: 'auto' },
  reasoning: { requested: false },
  stream: true,
  includeStreamUsage: true,
  identity: {
    ...(hint.native === undefined ? {} : { nativeSessionId: { value: hint.native, source: 'test' } }),
    ...(hint.promptCacheKey === undefined ? {} : { promptCacheKey: hint.promptCacheKey }),
  },
  headers: {},
  warnings: [],
});

/** Claude Code's date reminder, as the first text part of its first user message. */
export const dateReminder = (date: string): string =>
  `<system-reminder>\nAs you answer the user's questions, you can use the following context:\n# currentDate\nToday's date is ${date}.\n</system-reminder>\n\n`;

export const codexEnvironment = (cwd: string): string =>
  `<environment_context>\n  <cwd>${cwd}</cwd>\n  <shell>bash</shell>\n</environment_context>`;

/** A Claude Code worker-fork message: the shared boilerplate, then the worker's own directive. */
export const forkMessage = (directive: string): string =>
  `<fork-boilerplate>\nSTOP. READ THIS FIRST.\nYou are a forked worker process.\n</fork-boilerplate>\n\nYour directive: ${directive}`;

export const rejection =
  "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a file edit, the new_string was NOT written to the file). STOP what you are doing and wait for the user to tell you how to proceed.";

/**
 * Claude Code 2.1.332's worker-fork message, verbatim: one user text part after the tool results of the
 * parent's spawning call, starting with the fork boilerplate and ending with the worker's own directive.
 */
export const claudeCodeForkMessage = (directive: string): string =>
  `<fork-boilerplate>
You are a worker fork. The transcript above is the parent's history \u2014 inherited reference, not your situation. You are NOT a continuation of that agent. Execute ONE directive, then stop.

Hard rules:
- Do NOT spawn subagents with the Agent tool. The "default to forking" guidance is for the parent; you ARE the fork, execute directly.
- One shot: report once and stop. No follow-up questions, no proposed next steps, no waiting for the user.

Guidelines (your directive may override any of these):
- Stay in scope. Other forks may be handling adjacent work; if you spot something outside your directive, note it in a sentence and move on.
- Open with one line restating your task, so the parent can spot scope drift at a glance.
- Be concise \u2014 as short as the answer allows, no shorter. Plain text, no preamble, no meta-commentary.
- If you committed changes, list the paths and commit hashes in your report.
</fork-boilerplate>

Your directive: ${directive}`;
