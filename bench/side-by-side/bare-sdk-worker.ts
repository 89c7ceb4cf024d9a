/**
 * The floor for `side-by-side.bench.ts`: the bare `@cursor/sdk` doing what the bridge does for one
 * conversation, with nothing of the bridge in between — `Agent.create` in a fresh directory per
 * conversation with the bridge's in-memory store, `send` with one custom tool whose `execute` parks
 * until the driver posts its result. Runs in its own process (forked with IPC, `CURSOR_BACKEND_URL` and
 * `HOME` set by the driver) so its RSS and CPU are its own. Like the bridge, it keeps the 32 most recent
 * conversations' agents and closes (and removes the directory of) older ones.
 */

import { Agent, type SDKAgent, type SDKCustomTool } from '@cursor/sdk';
import { copyFile, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
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
  /** A new conversation, or with `conversation` (from a `text` reply) its next turn. */
  | { id: number; op: 'stream'; prompt: string; conversation?: string }
  | { id: number; op: 'closeAll' };

export type Reply = {
  id: number;
  ms?: number;
  /**
   * `text` and `tool`: from the start to `send` resolving with its run, where a server built on the SDK
   * could answer with its response headers (the bridge's side: its response headers).
   */
  sentMs?: number;
  /** `burst`: each conversation's start → `execute`, in the order of `prompts`. */
  each?: number[];
  /** `stream`: from its start to the first text delta. */
  firstMs?: number;
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

/**
 * `BENCH_BARE_VARIANT=<features,…>` (for `stream-probe.ts`, which bisects the bridge's options on the
 * 10k-delta answer): `project` (`settingSources: ['project']`), `agents` (an AGENTS.md in the directory),
 * `hooks` (the bridge's hooks.json and deny-hook script), `mcp` (`tools: ['mcp']`), `tool` (the custom
 * tool on the `stream` op too: the SDK's `custom-user-tools` MCP server), `nosandbox` (`sandboxOptions:
 * { enabled: false }`), `retries` (`enableAgentRetries: true`), `name` (`name: 'cursor-bridge'`),
 * `drain` (read `run.stream()` as well as `onDelta`, as the bridge does), `bridge` (as
 * `BENCH_BARE_OPTIONS=bridge`), `shared` (every conversation in one directory, so all share one executor
 * the SDK keeps warm: the SDK at its fastest, as one long-lived process in one project runs it).
 */
const variant = new Set(
  (process.env['BENCH_BARE_VARIANT'] ?? '').split(',').filter((feature) => feature !== ''),
);
const hookScript = process.env['BENCH_BARE_HOOK_SCRIPT'];
/** `bridge` in the variant is `BENCH_BARE_OPTIONS=bridge`, to combine with the other features. */
const bridgeOptions = process.env['BENCH_BARE_OPTIONS'] === 'bridge' || variant.has('bridge');
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
    if (oldest.dir !== sharedDir) await rm(oldest.dir, { recursive: true, force: true });
  }
};

/** `shared`: the one directory of every conversation (kept when a conversation is closed). */
const sharedDir = variant.has('shared') ? join(root, 'shared') : undefined;
if (sharedDir !== undefined) await mkdir(sharedDir, { recursive: true });

const open = async (): Promise<{ key: string; conversation: Conversation }> => {
  counter += 1;
  const key = `c${counter}`;
  const dir = sharedDir ?? (await mkdtemp(join(root, 'ws-')));
  if (variant.has('agents')) {
    await writeFile(join(dir, 'AGENTS.md'), '# Rules\n\nUse only the tools the client gave you.\n');
  }
  if (variant.has('hooks')) {
    await mkdir(join(dir, '.cursor', 'hooks'), { recursive: true });
    const script = join(dir, '.cursor', 'hooks', 'deny-builtin.mjs');
    if (hookScript !== undefined) await copyFile(hookScript, script);
    const command = JSON.stringify(`'${process.execPath}' '${script}'`);
    const hook = `{ "command": ${command}, "timeout": 15, "failClosed": true }`;
    await writeFile(
      join(dir, '.cursor', 'hooks.json'),
      `{ "version": 1, "hooks": { "preToolUse": [{ "command": ${command}, "matcher": "^(?!MCP:)", "timeout": 15, "failClosed": true }], ` +
        `"beforeShellExecution": [${hook}], "beforeReadFile": [${hook}], "subagentStart": [${hook}] } }`,
    );
  }
  const agent = await Agent.create({
    apiKey,
    model: { id: 'composer-2' },
    ...(bridgeOptions || variant.has('mcp') ? { tools: ['mcp'] } : {}),
    ...(variant.has('name') ? { name: 'cursor-bridge' } : {}),
    local: {
      cwd: dir,
      store: new InMemoryAgentStore(),
      ...(bridgeOptions ? { settingSources: ['project' as const], sandboxOptions: { enabled: false } } : {}),
      ...(variant.has('project') ? { settingSources: ['project' as const] } : {}),
      ...(variant.has('nosandbox') ? { sandboxOptions: { enabled: false } } : {}),
      ...(variant.has('retries') ? { enableAgentRetries: true } : {}),
    },
  });
  const conversation: Conversation = { agent, dir };
  conversations.set(key, conversation);
  return { key, conversation };
};

/** Opens a conversation and sends `prompt`; resolves when the SDK calls the custom tool's `execute`. */
/** The one custom tool (the bridge's client offers `Bash`), with its `execute`. */
const bashTool = (
  execute: () => Promise<{ content: { type: 'text'; text: string }[] }>,
): Record<string, SDKCustomTool> => ({
  Bash: {
    description: 'Run a shell command',
    inputSchema: { type: 'object', properties: { command: { type: 'string' } } },
    execute,
  },
});

const park = async (prompt: string): Promise<{ at: number; sentAt: number; key: string }> => {
  const { key, conversation } = await open();
  let sentAt = Number.NaN;
  const reached = new Promise<number>((resolveReached) => {
    void conversation.agent
      .send(prompt, {
        onDelta: ({ update }) => {
          if (update.type === 'text-delta') conversation.onText?.();
        },
        local: {
          customTools: bashTool(async () => {
            resolveReached(performance.now());
            await new Promise<void>((release) => (conversation.release = release));
            return { content: [{ type: 'text', text: 'parked' }] };
          }),
        },
      })
      .then((run) => {
        sentAt = performance.now();
        conversation.done = run.wait();
      });
  });
  const at = await reached;
  return { at, sentAt, key };
};

const handle = async (request: BareRequest): Promise<Omit<Reply, 'id'>> => {
  switch (request.op) {
    case 'text': {
      const start = performance.now();
      const { key, conversation } = await open();
      let firstText: number | undefined;
      const run = await conversation.agent.send(request.prompt, {
        onDelta: ({ update }) => {
          if (update.type === 'text-delta') firstText ??= performance.now();
        },
      });
      const sentMs = performance.now() - start;
      await run.wait();
      await forgetOldest();
      return { ms: (firstText ?? Number.NaN) - start, sentMs, conversation: key };
    }
    case 'tool': {
      const start = performance.now();
      const { at, sentAt, key } = await park(request.prompt);
      return { ms: at - start, sentMs: sentAt - start, conversation: key };
    }
    case 'burst': {
      const start = performance.now();
      const parked = await Promise.all(request.prompts.map(park));
      return {
        ms: Math.max(...parked.map(({ at }) => at)) - start,
        each: parked.map(({ at }) => at - start),
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
      const existing =
        request.conversation === undefined ? undefined : conversations.get(request.conversation);
      if (request.conversation !== undefined && existing === undefined) {
        throw new Error(`no conversation ${request.conversation}`);
      }
      const conversation = existing ?? (await open()).conversation;
      let firstText: number | undefined;
      const run = await conversation.agent.send(request.prompt, {
        onDelta: ({ update }) => {
          if (update.type === 'text-delta') firstText ??= performance.now();
        },
        ...(variant.has('tool')
          ? { local: { customTools: bashTool(async () => ({ content: [{ type: 'text', text: '' }] })) } }
          : {}),
      });
      const drained = variant.has('drain')
        ? (async () => {
            for await (const message of run.stream()) void message;
          })()
        : undefined;
      await run.wait();
      await drained;
      const ms = performance.now() - start;
      await forgetOldest();
      return { ms, firstMs: (firstText ?? Number.NaN) - start };
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
// Without the driver there is nothing left to do (`stream-probe.ts` disconnects to stop it; exiting, not
// being killed, lets `--cpu-prof` write its profile).
process.on('disconnect', () => process.exit(0));
process.send?.({ id: 0 } satisfies Reply);
