/**
 * Exact client markers and the "substantive user text" of a message: what the user actually wrote, with
 * client bookkeeping removed. Identity and trailing-turn classification both read user text through
 * this module so they agree on what counts. Markers are matched exactly (a whole text part, a fixed
 * prefix or a fixed tag), never by prompt-text regexes.
 */

import type { TurnUserPart } from '../../turn/turn-request.js';

/** The longest interrupt marker; longer texts are never compared (a Set lookup hashes the whole string). */
const maxMarkerChars = 64;

/**
 * Blocks clients inject into user messages that are not the user's words: Claude Code's
 * `<system-reminder>` context (date, git status, attribution), Codex's `<environment_context>` and
 * `<user_instructions>`. Only closed blocks are removed; an unclosed tag is left as typed.
 */
const clientBlocks: ReadonlyArray<readonly [open: string, close: string]> = [
  ['<system-reminder>', '</system-reminder>'],
  ['<environment_context>', '</environment_context>'],
  ['<user_instructions>', '</user_instructions>'],
];

/** Claude Code's interrupt markers, sent as a user text part (or tool result) exactly equal to one of these. */
export const interruptMarkers: ReadonlySet<string> = new Set([
  '[Request interrupted by user]',
  '[Request interrupted by user for tool use]',
]);

/** True when `text` (trimmed) is exactly one of {@link interruptMarkers}. */
export const isInterruptMarker = (text: string): boolean =>
  text.length <= maxMarkerChars && interruptMarkers.has(text.trim());

/** Claude Code's tool-rejection result text starts with this. */
export const rejectionPrefix = "The user doesn't want to proceed with this tool use.";

/** In a rejection "with reason", the user's replacement instruction follows this phrase. */
export const rejectionReasonMarker = 'To tell you how to proceed, the user said:';

/**
 * Markers that open a worker fork's own context inside an inherited transcript. Claude Code sends a fork's
 * message as one user text part that starts with `<fork-boilerplate>\nYou are a worker fork.` (after the
 * tool results of the parent's spawning call) and recognises a fork by exactly that start.
 */
const forkMarkers: readonly string[] = ['<fork-boilerplate>', 'You are a worker fork'];

/** Any opening tag of {@link clientBlocks}; one native regex pass is several times faster than an indexOf per tag. */
const clientBlockOpen = /<(?:system-reminder|environment_context|user_instructions)>/;

/** `text` without closed client blocks. Texts without an opening tag are returned as they are (the common case). */
export const stripClientBlocks = (text: string): string => {
  if (!clientBlockOpen.test(text)) return text;
  let result = text;
  for (const [open, close] of clientBlocks) {
    let from = 0;
    for (;;) {
      const start = result.indexOf(open, from);
      if (start === -1) break;
      const end = result.indexOf(close, start + open.length);
      if (end === -1) break;
      result = result.slice(0, start) + result.slice(end + close.length);
      from = start;
    }
  }
  return result;
};

/**
 * `text` from its first character that is not whitespace or part of a leading closed client block: the
 * start of what the client put in the part after its own bookkeeping.
 */
const afterLeadingClientBlocks = (text: string): string => {
  let rest = text.trimStart();
  for (;;) {
    const block = clientBlocks.find(([open]) => rest.startsWith(open));
    if (block === undefined) return rest;
    const end = rest.indexOf(block[1], block[0].length);
    if (end === -1) return rest;
    rest = rest.slice(end + block[1].length).trimStart();
  }
};

/**
 * True when a text part of `parts` starts with a fork marker — where Claude Code puts it — after at most
 * whitespace and closed client blocks. A marker anywhere else (pasted into a prompt, quoted inside a
 * reminder) is ordinary text and opens no context.
 */
export const opensFork = (parts: readonly TurnUserPart[]): boolean =>
  parts.some((part) => {
    if (part.type !== 'text') return false;
    const start = afterLeadingClientBlocks(part.text);
    return forkMarkers.some((marker) => start.startsWith(marker));
  });

/** An image's stable key: the URL, or media type, size and head of the base64 data (as the transcript digest does). */
const imageKey = (part: Extract<TurnUserPart, { type: 'image' }>): string =>
  part.source.kind === 'url'
    ? `[image ${part.source.url}]`
    : `[image ${part.source.mediaType} ${part.source.data.length} ${part.source.data.slice(0, 64)}]`;

/**
 * The user's own words in `parts`, or `''` when there are none: client blocks removed, interrupt markers
 * skipped, each part trimmed, images kept as stable keys, parts joined by newlines.
 */
export const substantiveText = (parts: readonly TurnUserPart[]): string => {
  const kept: string[] = [];
  for (const part of parts) {
    if (part.type === 'image') {
      kept.push(imageKey(part));
      continue;
    }
    const text = stripClientBlocks(part.text).trim();
    if (text !== '' && !isInterruptMarker(text)) kept.push(text);
  }
  return kept.join('\n');
};

/** True when a user message carries an interrupt marker as one of its text parts. */
export const hasInterruptMarker = (parts: readonly TurnUserPart[]): boolean =>
  parts.some((part) => part.type === 'text' && isInterruptMarker(part.text));

/** The joined text parts of a tool result. */
export const toolResultText = (parts: readonly TurnUserPart[]): string =>
  parts
    .flatMap((part) => (part.type === 'text' ? [part.text] : []))
    .join('\n')
    .trim();

/**
 * How Claude Code marked a tool result: `rejected` (the user declined the call), with the replacement
 * instruction when the user gave one; `interrupted` (the call was cut off); or `none`.
 */
export type ToolResultMark =
  { kind: 'none' } | { kind: 'interrupted' } | { kind: 'rejected'; replacement: boolean };

export const markOfToolResult = (parts: readonly TurnUserPart[]): ToolResultMark => {
  const text = toolResultText(parts);
  if (isInterruptMarker(text)) return { kind: 'interrupted' };
  if (!text.startsWith(rejectionPrefix)) return { kind: 'none' };
  const reason = text.indexOf(rejectionReasonMarker);
  const replacement = reason !== -1 && text.slice(reason + rejectionReasonMarker.length).trim() !== '';
  return { kind: 'rejected', replacement };
};
