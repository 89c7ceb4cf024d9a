/**
 * The floor for `side-by-side.bench.ts`: the bare `@cursor/sdk` doing what the bridge does for one
 * conversation, with nothing of the bridge in between — `Agent.create` in a fresh directory per
 * conversation with the bridge's in-memory store, `send` with one custom tool whose `execute` parks
 * until the driver posts its result. Runs in its own process (forked with IPC, `CURSOR_BACKEND_URL` and
 * `HOME` set by the driver) so its RSS and CPU are its own. Like the bridge, it keeps the 32 most recent
 * conversations' agents and closes (and removes the directory of) older ones.
 */

import { Agent, type SDKAgent } from '@cursor/sdk';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
// From `dist/` (built by the driver): this worker runs on Node's own type stripping, without the tsx
// loader, so its RSS is the SDK's and the store's alone.
import { InMemoryAgentStore } from '../../dist/src/upstream/cursor/in-memory-agent-store.js';

/** A request from the driver; every request gets one {@link Reply} with the same `id`. */
export type BareRequest =
  | { id: number; op: 'text'; prompt: string }
  | { id: number; op: 'tool'; prompt: string }
  /** `tool` for all `prompts` at once; `ms` is from their start until the last one's `execute`. */
  | { id: number; op: 'burst'; prompts: string[] }
  | { id: number; op: 'result'; conversation: string }
  | { id: number; op: 'stream'; prompt: string }
  | { id: number; op: 'closeAll' };

export type Reply = {
  id: number;
  ms?: number;
  conversation?: string;
  conversations?: string[];
  error?: string;
};

const keep = 32;
/**
 * `BENCH_BARE_OPTIONS=bridge`: create agents with the options the bridge needs (`settingSources:
 * ['project']` for AGENTS.md and the deny-hooks, `tools: ['mcp']`), to split the gap between the SDK's
 * cost of those options and the bridge's own.
 */
const bridgeOptions = process.env['BENCH_BARE_OPTIONS'] === 'bridge';
const apiKey = 'crsr_bench';
// The driver puts the conversations' directories as deep as the bridge's scratch workspaces: the SDK
// reads .gitignore / .cursorignore in every ancestor of the files it checks.
const root = process.env['BENCH_BARE_ROOT'] ?? (await mkdtemp(join(tmpdir(), 'cb-bench-bare-')));
await mkdir(root, { recursive: true });

type Conversation = {
  agent: SDKAgent;
  dir: string;
  /** Resolves the parked `execute`. */
  release?: () => void;
  /** Set when the first text delta after the release arrives. */
  onText?: (() => void) | undefined;
  done?: Promise<unknown>;
};

const conversations = new Map<string, Conversation>();
let counter = 0;

const forgetOldest = async (): Promise<void> => {
  while (conversations.size > keep) {
    const [key, oldest] = conversations.entries().next().value as [string, Conversation];
    conversations.delete(key);
    oldest.agent.close();
    await rm(oldest.dir, { recursive: true, force: true });
  }
};

const open = async (): Promise<{ key: string; conversation: Conversation }> => {
  counter += 1;
  const key = `c${counter}`;
  const dir = await mkdtemp(join(root, 'ws-'));
  const agent = await Agent.create({
    apiKey,
    model: { id: 'composer-2' },
    ...(bridgeOptions ? { tools: ['mcp'] } : {}),
    local: {
      cwd: dir,
      store: new InMemoryAgentStore(),
      ...(bridgeOptions ? { settingSources: ['project' as const], sandboxOptions: { enabled: false } } : {}),
    },
  });
  const conversation: Conversation = { agent, dir };
  conversations.set(key, conversation);
  return { key, conversation };
};

/** Opens a conversation and sends `prompt`; resolves when the SDK calls the custom tool's `execute`. */
const park = async (prompt: string): Promise<{ at: number; key: string }> => {
  const { key, conversation } = await open();
  const reached = new Promise<number>((resolveReached) => {
    void conversation.agent
      .send(prompt, {
        onDelta: ({ update }) => {
          if (update.type === 'text-delta') conversation.onText?.();
        },
        local: {
          customTools: {
            Bash: {
              description: 'Run a shell command',
              inputSchema: { type: 'object', properties: { command: { type: 'string' } } },
              execute: async () => {
                resolveReached(performance.now());
                await new Promise<void>((release) => (conversation.release = release));
                return { content: [{ type: 'text', text: 'parked' }] };
              },
            },
          },
        },
      })
      .then((run) => {
        conversation.done = run.wait();
      });
  });
  return { at: await reached, key };
};

const handle = async (request: BareRequest): Promise<Omit<Reply, 'id'>> => {
  switch (request.op) {
    case 'text': {
      const start = performance.now();
      const { conversation } = await open();
      let firstText: number | undefined;
      const run = await conversation.agent.send(request.prompt, {
        onDelta: ({ update }) => {
          if (update.type === 'text-delta') firstText ??= performance.now();
        },
      });
      await run.wait();
      await forgetOldest();
      return { ms: (firstText ?? Number.NaN) - start };
    }
    case 'tool': {
      const start = performance.now();
      const { at, key } = await park(request.prompt);
      return { ms: at - start, conversation: key };
    }
    case 'burst': {
      const start = performance.now();
      const parked = await Promise.all(request.prompts.map(park));
      return {
        ms: Math.max(...parked.map(({ at }) => at)) - start,
        conversations: parked.map(({ key }) => key),
      };
    }
    case 'result': {
      const conversation = conversations.get(request.conversation);
      if (conversation?.release === undefined) throw new Error(`no parked ${request.conversation}`);
      const start = performance.now();
      const firstText = new Promise<number>((resolve) => {
        conversation.onText = () => {
          conversation.onText = undefined;
          resolve(performance.now());
        };
      });
      conversation.release();
      const at = await firstText;
      await conversation.done;
      await forgetOldest();
      return { ms: at - start };
    }
    case 'stream': {
      const start = performance.now();
      const { conversation } = await open();
      const run = await conversation.agent.send(request.prompt, { onDelta: () => {} });
      await run.wait();
      await forgetOldest();
      return { ms: performance.now() - start };
    }
    case 'closeAll': {
      for (const [key, conversation] of conversations) {
        conversations.delete(key);
        conversation.agent.close();
      }
      await rm(root, { recursive: true, force: true });
      return {};
    }
  }
};

process.on('message', (request: BareRequest) => {
  handle(request).then(
    (reply) => process.send?.({ id: request.id, ...reply } satisfies Reply),
    (error: unknown) =>
      process.send?.({ id: request.id, error: error instanceof Error ? error.stack : String(error) }),
  );
});
process.send?.({ id: 0 } satisfies Reply);
