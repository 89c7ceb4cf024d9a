/**
 * The session key is an opaque id the bridge mints: clients never send or receive x-ccr-cursor-session.
 * The bridge never answers with that header, and a request that carries it — even with a live
 * conversation's real session key — is identified exactly as without it.
 */

import { afterEach, describe, expect, it } from 'vitest';
import type { WorkspacePort } from '../../../src/engine/engine-deps.js';
import { startScriptedBridgeServer } from '../../helpers/scripted-bridge-server.js';

const header = 'x-ccr-cursor-session';
const answer = [
  { type: 'text-delta' as const, text: 'ok' },
  { type: 'end' as const, status: 'finished' as const },
];

let close: (() => Promise<void>) | undefined;
afterEach(async () => {
  await close?.();
  close = undefined;
});

/** A workspace port that records each turn's session key (the engine's opaque id). */
const recordingKeys = (): { keys: string[]; workspace: WorkspacePort } => {
  const keys: string[] = [];
  return {
    keys,
    workspace: {
      prepare: async (sessionKey) => {
        keys.push(sessionKey);
        return { workspaceDir: '/tmp/scratch', grounding: { head: '', tail: '' } };
      },
      remove: async () => {},
      scratch: async () => ({ workspaceDir: '/tmp/scratch', release: async () => {} }),
    },
  };
};

const requests = {
  anthropic: (text: string) => ({
    path: '/v1/messages',
    body: { model: 'composer-2', max_tokens: 64, messages: [{ role: 'user', content: text }] },
  }),
  chat: (text: string) => ({
    path: '/v1/chat/completions',
    body: { model: 'composer-2', messages: [{ role: 'user', content: text }] },
  }),
  responses: (text: string) => ({
    path: '/v1/responses',
    body: { model: 'composer-2', input: text },
  }),
};

describe.each(Object.entries(requests))('%s: x-ccr-cursor-session', (_protocol, build) => {
  it.each([true, false])('is never sent to a client, nor read from one (stream %s)', async (stream) => {
    const { keys, workspace } = recordingKeys();
    const bridge = await startScriptedBridgeServer([answer, answer], {}, { workspace });
    close = bridge.close;
    const post = async (text: string, headers: Record<string, string> = {}) => {
      const { path, body } = build(text);
      const response = await fetch(`${bridge.url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify({ ...body, stream }),
      });
      const raw = await response.text();
      expect(response.status).toBe(200);
      expect(response.headers.get(header)).toBeNull();
      return raw;
    };

    const first = await post('alpha opening');
    const [key] = keys;
    expect(key).toMatch(/^[0-9a-f]{32}$/);
    expect(first).not.toContain(key);
    // Another conversation presents the first one's real key: it still gets its own session and agent.
    await post('beta opening', { [header]: key! });
    expect(keys).toHaveLength(2);
    expect(keys[1]).not.toBe(key);
    expect(new Set(bridge.upstream.calls.map((call) => call.sessionId)).size).toBe(2);
  });
});
