/**
 * Host environment facts: what the client reported about the machine its tools run on. Real clients put
 * them in different places — Claude Code a `# Environment` list ("Primary working directory: …") in a
 * system block, a mid-conversation system message or a reminder; OpenCode an `<env>` block in the system
 * string; Codex `<environment_context>` in a user message — so {@link extractHostFacts} searches every
 * text it is given and the newest block wins. It never guesses: no block, no facts.
 */

import type { TurnRequest } from '../turn/turn-request.js';
import {
  parseClaudeCodeEnvironment,
  parseCodexEnvironment,
  parseEnvBlock,
  type HostFact,
  type HostFactBlock,
  type HostFactsSource,
} from './host-fact-blocks.js';

/**
 * The facts of one environment block. `facts` keeps every reported key/value pair in order; the other
 * fields are the normalised subset (absent when the block did not say).
 */
export type HostFacts = {
  source: HostFactsSource;
  facts: HostFact[];
  /** The project root / working directory on the host. */
  root?: string;
  platform?: string;
  shell?: string;
  osVersion?: string;
  isGitRepo?: boolean;
};

const rootKeys = new Set([
  'primary working directory',
  'working directory',
  'current working directory',
  'cwd',
  'project root',
  'project directory',
]);
const gitKeys = new Set([
  'is a git repository',
  'is directory a git repo',
  'is git repo',
  'git repo',
  'git repository',
]);
const platformKeys = new Set(['platform', 'os']);
const shellKeys = new Set(['shell']);
const osVersionKeys = new Set(['os version']);

const parseYesNo = (value: string): boolean | undefined => {
  const lowered = value.trim().toLowerCase();
  if (lowered === 'true' || lowered === 'yes') return true;
  if (lowered === 'false' || lowered === 'no') return false;
  return undefined;
};

/** Normalise a parsed block: the first fact of each kind wins, `Shell: unknown` is no shell. */
export const normalizeHostFacts = (block: HostFactBlock): HostFacts => {
  const result: HostFacts = { source: block.source, facts: block.facts };
  for (const { key, value } of block.facts) {
    const lowered = key.toLowerCase();
    if (value === '') continue;
    if (result.root === undefined && rootKeys.has(lowered)) result.root = value;
    else if (result.platform === undefined && platformKeys.has(lowered)) result.platform = value;
    else if (result.shell === undefined && shellKeys.has(lowered) && value.toLowerCase() !== 'unknown')
      result.shell = value;
    else if (result.osVersion === undefined && osVersionKeys.has(lowered)) result.osVersion = value;
    else if (result.isGitRepo === undefined && gitKeys.has(lowered)) {
      const parsed = parseYesNo(value);
      if (parsed !== undefined) result.isGitRepo = parsed;
    }
  }
  return result;
};

type Candidate = { offset: number; parse: (text: string, offset: number) => HostFactBlock | undefined };

const markers: ReadonlyArray<{ marker: string; parse: Candidate['parse'] }> = [
  { marker: 'Primary working directory:', parse: parseClaudeCodeEnvironment },
  { marker: '<environment_context>', parse: parseCodexEnvironment },
  { marker: '<env>', parse: parseEnvBlock },
];

const candidatesOf = (text: string): Candidate[] => {
  const candidates: Candidate[] = [];
  for (const { marker, parse } of markers) {
    for (let offset = text.indexOf(marker); offset !== -1; offset = text.indexOf(marker, offset + 1)) {
      candidates.push({ offset, parse });
    }
  }
  return candidates.sort((left, right) => right.offset - left.offset);
};

/**
 * The newest environment block among `texts` (in request order: later texts and later positions are
 * newer), normalised; `undefined` when no text carries one. Pure and linear in the input size: it only
 * searches for the block markers and parses the blocks it finds.
 */
export const extractHostFacts = (texts: readonly string[]): HostFacts | undefined => {
  for (let index = texts.length - 1; index >= 0; index -= 1) {
    const text = texts[index];
    if (text === undefined || text === '') continue;
    for (const candidate of candidatesOf(text)) {
      const block = candidate.parse(text, candidate.offset);
      if (block !== undefined && block.facts.length > 0) return normalizeHostFacts(block);
    }
  }
  return undefined;
};

/**
 * The texts of a request that may carry the host environment, in request order: top-level system text,
 * mid-conversation system messages and user text. Assistant text and tool results are left out — a tool
 * that printed an `<env>` block says nothing about where the tools run.
 */
export const collectHostFactTexts = (request: Pick<TurnRequest, 'system' | 'messages'>): string[] => {
  const texts = request.system.map((part) => part.text);
  for (const message of request.messages) {
    if (message.role !== 'system' && message.role !== 'user') continue;
    for (const part of message.content) if (part.type === 'text') texts.push(part.text);
  }
  return texts;
};
