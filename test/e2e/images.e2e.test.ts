/**
 * Images from the real clients (pinned, from npm, offline) through `cursor-bridge serve` and the real
 * `@cursor/sdk` to the fake Cursor backend, which records every image it receives: a screenshot pasted into
 * Claude Code (a stream-json image block), a PNG Claude Code's Read tool returns, Codex's `-i`, OpenCode's
 * `--file`. Each checks that the backend received the image's pixels: the first frame decoded from what
 * arrived hashes the same as the file the user attached.
 */

import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';

import { beforeAll, describe, expect, it } from 'vitest';

import type { FakeReceivedImage } from '../fakes/cursor-backend/index.js';
import { claudeCodeDriver, claudeCodeResult } from '../helpers/e2e/claude-code-driver.js';
import type { ClientDriver } from '../helpers/e2e/client-driver.js';
import { codexDriver } from '../helpers/e2e/codex-driver.js';
import { installTimeoutMs, prepareE2e, scenarioTimeoutMs, startE2e } from '../helpers/e2e/e2e-harness.js';
import { expectSamePixels, readPngScenario, screenshot } from '../helpers/e2e/image-scenario.js';
import { opencodeDriver } from '../helpers/e2e/opencode-driver.js';

/** The user attaches `shot.png` (inside the project) to a prompt; the model answers without tools. */
const attachAndAnswer = async (
  driver: ClientDriver,
): Promise<{ image: Buffer; received: FakeReceivedImage[] }> => {
  const e2e = await startE2e(driver, { turns: [{ steps: [{ text: 'The screenshot shows a blue bar.' }] }] });
  const image = await screenshot();
  const path = join(e2e.sandbox.project, 'shot.png');
  await writeFile(path, image);
  const run = await e2e.turn('What does this screenshot show?', { images: [path] });

  expect(run.exitCode, e2e.report()).toBe(0);
  const received = e2e.bridge.mainRuns().flatMap((backendRun) => backendRun.images);
  return { image, received };
};

describe('images from the real clients', { timeout: scenarioTimeoutMs }, () => {
  beforeAll(async () => {
    for (const client of ['claude-code', 'codex', 'opencode'] as const) await prepareE2e(client);
  }, installTimeoutMs);

  describe('Claude Code', () => {
    it('sends a pasted image (a stream-json image block) to the model as pixels', async () => {
      const { image, received } = await attachAndAnswer(claudeCodeDriver);

      expect(received).toHaveLength(1);
      await expectSamePixels(received[0], image);
    });

    it('sends the PNG its Read tool returns to the model as pixels', async () => {
      const e2e = await startE2e(claudeCodeDriver, readPngScenario);
      const image = await screenshot();
      const path = join(e2e.sandbox.project, 'shot.png');
      await writeFile(path, image);
      const run = await e2e.turn(`Look at ${path} and tell me what it shows.`);

      expect(run.exitCode, e2e.report()).toBe(0);
      expect(claudeCodeResult(run.stdout)?.result).toBe('It is a screenshot with a blue bar.');
      const results = e2e.bridge.mainRuns().flatMap((backendRun) => backendRun.toolResults);
      expect(results).toHaveLength(1);
      expect(results[0]?.images).toHaveLength(1);
      await expectSamePixels(results[0]?.images[0], image);
    });
  });

  it('Codex: sends `-i shot.png` to the model as pixels', async () => {
    const { image, received } = await attachAndAnswer(codexDriver);

    expect(received).toHaveLength(1);
    await expectSamePixels(received[0], image);
  });

  it('OpenCode: sends `--file shot.png` to the model as pixels', async () => {
    const { image, received } = await attachAndAnswer(opencodeDriver);

    expect(received).toHaveLength(1);
    await expectSamePixels(received[0], image);
  });
});
