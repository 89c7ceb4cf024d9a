/**
 * `GET /debug/grounding` shows what a live conversation's agent is grounded with — the workspace files, the
 * deny message, the prompt head and tail of its latest turn and the host facts they were rendered from — and
 * nothing of the conversation. Through the whole bridge (config → templates → workspaces → engine → HTTP)
 * over a scripted upstream, compared with what the upstream received and what the workspace holds on disk.
 *
 * Host environment grounding: bridge mode extracts the host's <env> block (project root, platform, OS
 * version, and any other reported facts) from each incoming request and states the real topology in three
 * places: AGENTS.md inside the workspace, the head and the tail of the prompt sent to the agent, the message
 * returned when a Cursor built-in is denied. Host facts are re-read every turn.
 */

import { readFile } from 'node:fs/promises';
import { get } from 'node:http';
import type { Socket } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Bridge } from '../../../src/bridge/create-bridge.js';
import type { ScriptedUpstream } from '../../../src/upstream/scripted/scripted-upstream.js';
import { startScriptedBridge } from '../../helpers/scripted-bridge.js';
import { encodeTemplateJson } from '../../../src/workspace/template-renderer.js';
import type { GroundingPreview } from '../../../src/workspace/template-preview.js';

let cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const step of cleanup.reverse()) await step();
  cleanup = [];
});

const userMarker = 'user-words-4f1d9c';
const assistantMarker = 'assistant-words-8b2e7a';
const followUpMarker = 'user-follow-up-2c6a05';

const environment = (root: string): string =>
  '# Environment\nYou have been invoked in the following environment: \n' +
  ` - Primary working directory: ${root}\n - Is a git repository: true\n - Platform: linux\n - OS Version: Linux 6.8.0\n`;

type Started = { bridge: Bridge; url: string; upstream: ScriptedUpstream };

const startBridge = async (config: Record<string, unknown> = {}, env = {}): Promise<Started> => {
  const started = await startScriptedBridge({
    source: () => [
      { type: 'text-delta', text: `Answer ${assistantMarker}` },
      { type: 'end', status: 'finished' },
    ],
    config,
    env,
  });
  cleanup.push(started.close);
  return started;
};

/** One turn of `conversation`: its first user message, or with `followUp` the exchange so far and a second one. */
const sendTurn = async (
  url: string,
  conversation: string,
  root: string,
  headers = {},
  followUp = false,
): Promise<void> => {
  const first = { role: 'user', content: `Please look at ${userMarker}.` };
  const messages = followUp
    ? [
        first,
        { role: 'assistant', content: `Answer ${assistantMarker}` },
        { role: 'user', content: `And now, ${followUpMarker}?` },
      ]
    : [first];
  const response = await fetch(`${url}/v1/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-claude-code-session-id': conversation, ...headers },
    body: JSON.stringify({
      model: 'composer-2',
      max_tokens: 100,
      system: `You are a coding agent.\n${environment(root)}`,
      tools: [{ name: 'Bash', input_schema: { type: 'object' } }],
      messages,
    }),
  });
  expect(response.status).toBe(200);
  expect(await response.text()).toContain(assistantMarker);
};

const readPreview = async (url: string, headers: Record<string, string> = {}) => {
  const response = await fetch(`${url}/debug/grounding`, { headers });
  const text = await response.text();
  return {
    status: response.status,
    text,
    json: response.status === 200 ? (JSON.parse(text) as GroundingPreview) : undefined,
  };
};

/** `GET /debug/grounding` over a connection of its own (no keep-alive reuse): the status and body. */
const readOnNewConnection = (url: string): Promise<{ status: number; text: string }> =>
  new Promise((resolve, reject) => {
    get(`${url}/debug/grounding`, { agent: false }, (response) => {
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (text += chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, text }));
    }).on('error', reject);
  });

describe('GET /debug/grounding', () => {
  it("shows each live conversation's grounding as its agent got it, and no conversation text", async () => {
    const { url, upstream } = await startBridge();
    await sendTurn(url, 'conversation-a', '/home/ada/first');
    await sendTurn(url, 'conversation-a', '/home/ada/moved', {}, true); // host facts re-read every turn

    const preview = await readPreview(url);
    expect(preview.status).toBe(200);
    expect(preview.json?.mode).toBe('bridge');
    expect(preview.json?.sessions).toHaveLength(1);
    const session = preview.json?.sessions[0];
    expect(upstream.calls).toHaveLength(2);
    const call = upstream.calls.at(-1);
    if (session === undefined || call === undefined) throw new Error('no session or no upstream call');
    expect(session.workspaceDir).toBe(call.sessionOptions.workspaceDir);
    expect(session.session).toMatch(/^[0-9a-f]{32}$/);
    expect(Number.isNaN(Date.parse(session.lastTurnAt))).toBe(false);

    // The host facts of the latest turn.
    expect(session.facts).toMatchObject({
      source: 'claude-code',
      root: '/home/ada/moved',
      platform: 'linux',
      osVersion: 'Linux 6.8.0',
      isGitRepo: true,
    });
    // The prompt head and tail exactly as the latest run's prompt opens and closes.
    const prompt = call.input.prompt.text;
    expect(session.prompt.head).toMatchObject({ template: 'prompt-head.md', origin: 'default' });
    expect(session.prompt.tail).toMatchObject({ template: 'prompt-tail.md', origin: 'default' });
    expect(prompt.startsWith(`${session.prompt.head.text}\n`)).toBe(true);
    expect(prompt.endsWith(`\n${session.prompt.tail.text}`)).toBe(true);
    expect(session.prompt.tail.text).toContain('/home/ada/moved');
    // The workspace files as they are on disk, and the deny message baked into the hook script.
    expect(session.files.map((file) => file.path)).toEqual([
      'AGENTS.md',
      '.cursor/hooks.json',
      '.cursor/hooks/deny-builtin.mjs',
    ]);
    for (const file of session.files) {
      expect(file.text).toBe(await readFile(join(session.workspaceDir, ...file.path.split('/')), 'utf8'));
    }
    expect(session.files[0]?.text).toContain('`/home/ada/moved`');
    expect(session.denyMessage?.template).toBe('deny-message.md');
    expect(session.denyMessage?.text).toContain('Use host paths under /home/ada/moved.');
    expect(session.files[2]?.text).toContain(encodeTemplateJson(session.denyMessage?.text ?? ''));

    // Nothing of what the user or the model said.
    expect(prompt).toContain(followUpMarker);
    expect(upstream.calls[0]?.input.prompt.text).toContain(userMarker);
    expect(preview.text).not.toContain(userMarker);
    expect(preview.text).not.toContain(followUpMarker);
    expect(preview.text).not.toContain(assistantMarker);
    expect(preview.text).not.toContain('You are a coding agent');
  });

  it("releases a conversation's grounding when its session ends", async () => {
    const { url } = await startBridge({}, { CURSOR_BRIDGE_MAX_SESSIONS: '1' });
    await sendTurn(url, 'conversation-a', '/home/ada/first');
    expect((await readPreview(url)).json?.sessions.map((session) => session.facts?.root)).toEqual([
      '/home/ada/first',
    ]);
    // At the cap of one session, a second conversation evicts the first: its session ends.
    await sendTurn(url, 'conversation-b', '/home/ada/second');
    await vi.waitFor(
      async () =>
        expect((await readPreview(url)).json?.sessions.map((session) => session.facts?.root)).toEqual([
          '/home/ada/second',
        ]),
      { timeout: 30_000, interval: 20 },
    );
  });

  it('answers only requests from this machine, not relayed by a proxy', async () => {
    const { bridge, url } = await startBridge();
    await sendTurn(url, 'conversation-a', '/home/ada/first');
    for (const header of ['x-forwarded-for', 'forwarded', 'x-real-ip']) {
      const relayed = await readPreview(url, { [header]: '203.0.113.9' });
      expect(relayed.status).toBe(403);
      expect(relayed.text).toContain("answers only requests made on the bridge's own machine");
      expect(relayed.text).not.toContain('/home/ada/first');
    }
    // A peer on another machine: the server sees its address on the accepted socket.
    const remote = (socket: Socket): void => {
      Object.defineProperty(socket, 'remoteAddress', { value: '192.0.2.44' });
    };
    bridge.server.prependListener('connection', remote);
    const fromAfar = await readOnNewConnection(url);
    bridge.server.off('connection', remote);
    expect(fromAfar.status).toBe(403);
    expect(fromAfar.text).not.toContain('/home/ada/first');
    expect((await readOnNewConnection(url)).status).toBe(200);
  });

  it('requires the APIKEY like every other route when one is configured', async () => {
    const { url } = await startBridge({ APIKEY: 'bridge-key' });
    await sendTurn(url, 'conversation-a', '/home/ada/first', { 'x-api-key': 'bridge-key' });
    const without = await readPreview(url);
    expect(without.status).toBe(401);
    expect(without.text).not.toContain('/home/ada/first');
    expect((await readPreview(url, { 'x-api-key': 'wrong' })).status).toBe(401);
    const withKey = await readPreview(url, { authorization: 'Bearer bridge-key' });
    expect(withKey.status).toBe(200);
    expect(withKey.json?.sessions[0]?.facts?.root).toBe('/home/ada/first');
  });

  it('lists no session before the first turn', async () => {
    const { url } = await startBridge();
    const preview = await readPreview(url);
    expect(preview.status).toBe(200);
    expect(preview.json).toMatchObject({ mode: 'bridge', sessions: [], templates: { problems: [] } });
  });
});
