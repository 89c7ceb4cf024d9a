import { pino } from 'pino';
import { resolveCursorApiKey } from '../config/cursor-auth.js';
import type { Env } from '../config/interpolate.js';
import { CursorUpstream } from '../upstream/cursor/cursor-upstream.js';
import { InMemoryAgentStore } from '../upstream/cursor/in-memory-agent-store.js';

/** Cursor's model ids through the SDK, with `CURSOR_API_KEY` (rejects with the auth rule's message). */
export const listCursorCatalog = async (env: Env): Promise<string[]> => {
  const auth = resolveCursorApiKey(undefined, env);
  if (!auth.ok) throw new Error(auth.error.message);
  const upstream = new CursorUpstream({
    auth: { ok: true, apiKey: auth.value.apiKey },
    logger: pino({ level: 'silent' }),
    mode: 'bridge',
    sandboxEnabled: false,
    createStore: () => new InMemoryAgentStore(),
  });
  return (await upstream.listModels()).map((model) => model.id);
};
