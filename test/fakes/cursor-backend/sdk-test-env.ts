/**
 * Test-file setup for driving the real `@cursor/sdk` against the fake backend.
 *
 * The SDK reads `CURSOR_BACKEND_URL` once, when it is first imported, so call {@link startSdkTestEnv}
 * once per test file (vitest runs each file in its own forked process) and before anything imports
 * `@cursor/sdk`. It sets `HOME` to a fresh temp dir (the SDK writes under `~/.cursor`), `CURSOR_API_KEY`
 * to `crsr_test`, points `CURSOR_BACKEND_URL` at the fake and imports the SDK dynamically.
 */

import { mkdtemp, realpath, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';

import type * as CursorSdkModule from '@cursor/sdk';

import type { FakeCursorBackend, FakeCursorBackendOptions } from './fake-cursor-backend.js';
import { startFakeCursorBackend } from './fake-cursor-backend.js';

export type CursorSdk = typeof CursorSdkModule;

export type SdkTestEnv = {
  backend: FakeCursorBackend;
  sdk: CursorSdk;
  /** The temporary `HOME`. */
  home: string;
  /** A temporary directory to use as the agent's `local.cwd`. */
  workspace: string;
  /** Closes the fake and removes the temp dirs (the previous `HOME` is restored). */
  cleanup(): Promise<void>;
};

let importedWith: string | undefined;

/** Starts the fake, prepares the environment and imports the SDK. Once per test file. */
export const startSdkTestEnv = async (options: FakeCursorBackendOptions = {}): Promise<SdkTestEnv> => {
  if (importedWith !== undefined) {
    throw new Error(`@cursor/sdk was already imported against ${importedWith} in this process`);
  }
  const backend = await startFakeCursorBackend(options);
  const home = await realpath(await mkdtemp(path.join(tmpdir(), 'cursor-bridge-home-')));
  const workspace = await realpath(await mkdtemp(path.join(tmpdir(), 'cursor-bridge-workspace-')));
  const previousHome = process.env.HOME;
  process.env.HOME = home;
  process.env.CURSOR_BACKEND_URL = backend.url;
  process.env.CURSOR_API_KEY = 'crsr_test';
  importedWith = backend.url;
  const sdk = await import('@cursor/sdk');
  return {
    backend,
    sdk,
    home,
    workspace,
    cleanup: async () => {
      await backend.close();
      if (previousHome === undefined) delete process.env.HOME;
      else process.env.HOME = previousHome;
      await rm(home, { recursive: true, force: true });
      await rm(workspace, { recursive: true, force: true });
    },
  };
};
