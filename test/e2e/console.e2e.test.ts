/**
 * The console in a real browser: headless Chromium (Debian's package) opens `/console` of a real
 * `cursor-bridge serve` (the real `@cursor/sdk`, the fake Cursor backend) while the real Claude Code holds a
 * conversation with it, offline, as the other Claude Code acceptance tests run it.
 *
 * - the conversation appears, parks on its Bash call (the tool's name and age shown), and finishes;
 * - a head template edited in the grounding editor, previewed against that conversation's host facts and
 *   saved, is picked up by the bridge's watcher, and the next turn's prompt (as the backend received it)
 *   carries the edit;
 * - an unknown placeholder shows the error with its "did you mean", and nothing is saved;
 * - nothing the user or the model said reaches the page: not its HTML, not anything the console served.
 *
 * Screenshots of each state go to test/.cache/screenshots/console-*.png.
 */

import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, screenshot } from '../helpers/browser.js';
import { claudeCodeDriver, claudeCodeResult } from '../helpers/e2e/claude-code-driver.js';
import { installTimeoutMs, prepareE2e, startE2e } from '../helpers/e2e/e2e-harness.js';
import { startServeBridge, type ServeBridge } from '../helpers/e2e/serve-bridge.js';
import { until } from '../helpers/until.js';

const promptMarker = 'user-says-91c2f7';
const answerMarker = 'model-says-4e80aa';
const toolMarker = 'tool-prints-0b37d5';
const editMarker = 'Console edit 6d1f93: the project is on the host.';

/** Everything the console sent to a reader of its live feed, collected from the test's own connection. */
const readFeed = (url: string, signal: AbortSignal): { text: () => string; done: Promise<void> } => {
  let text = '';
  const done = (async () => {
    const response = await fetch(url, { signal });
    const reader = response.body?.getReader();
    const decoder = new TextDecoder();
    for (;;) {
      const chunk = await reader?.read().catch(() => undefined);
      if (chunk === undefined || chunk.done) return;
      text += decoder.decode(chunk.value, { stream: true });
    }
  })().catch(() => {});
  return { text: () => text, done };
};

describe(
  'the console in a real browser, beside a real Claude Code conversation',
  { timeout: 240_000 },
  () => {
    let browser: Browser | undefined;
    beforeAll(async () => {
      await prepareE2e('claude-code');
      browser = await launchBrowser();
    }, installTimeoutMs);
    afterAll(async () => {
      await browser?.close();
    });

    it('shows the conversation park and finish, and edits the grounding the next turn gets', async () => {
      let serve: ServeBridge | undefined;
      const e2e = await startE2e(
        claudeCodeDriver,
        {
          turns: [
            {
              steps: [
                { text: 'Running it.', toolCalls: [{ shell: `sleep 4; echo ${toolMarker}` }] },
                { text: `Done: ${answerMarker}.` },
              ],
            },
            { steps: [{ text: 'Second answer.' }] },
          ],
        },
        { startBridge: async (options) => (serve = await startServeBridge(options)) },
      );
      if (serve === undefined || browser === undefined)
        throw new Error('e2e: serve or the browser did not start');
      const base = `http://127.0.0.1:${serve.port}`;
      const feedAbort = new AbortController();
      const feed = readFeed(`${base}/console/api/events`, feedAbort.signal);
      const served: string[] = [];
      const page: Page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
      const pageErrors: string[] = [];
      page.on('pageerror', (error) => pageErrors.push(String(error)));
      page.on('response', (response) => {
        if (!response.url().includes('/console/api/') || response.url().endsWith('/events')) return;
        void response.text().then(
          (body) => served.push(body),
          () => {},
        );
      });
      try {
        await page.goto(`${base}/console`);
        await page.getByTestId('connection').filter({ hasText: 'live' }).waitFor();
        await page.getByTestId('no-conversations').waitFor();
        await screenshot(page, 'console-1-idle');

        // The conversation: its Bash call sleeps, so the run is parked while the page looks.
        const firstTurn = e2e.turn(`Run the check. ${promptMarker}`);
        const parkedRow = page.locator('[data-testid=conversation-row][data-state=parked]');
        await parkedRow.waitFor({ timeout: 60_000 });
        await expect
          .poll(() => parkedRow.getByTestId('parked-tools').textContent())
          .toMatch(/^Bash · \d+ s$/);
        const session = await parkedRow.getAttribute('data-session');
        expect(await parkedRow.textContent()).toContain('Claude Code');
        expect(await parkedRow.textContent()).toContain('composer-2');
        await screenshot(page, 'console-2-parked');

        const run = await firstTurn;
        expect(run.exitCode).toBe(0);
        expect(claudeCodeResult(run.stdout)?.result).toContain(answerMarker);
        const finishedRow = page.locator(`[data-testid=conversation-row][data-session="${session}"]`);
        await expect.poll(() => finishedRow.getAttribute('data-state'), { timeout: 20_000 }).toBe('idle');
        expect(await finishedRow.locator('td').nth(5).textContent()).toBe('2');
        await screenshot(page, 'console-3-finished');

        // The grounding editor: the head template, previewed against the live conversation's host facts.
        await page.getByTestId('tab-grounding').click();
        await page.locator('[data-template="prompt-head.md"]').click();
        const editor = page.getByTestId('template-editor');
        const original = await editor.inputValue();
        expect(original).toContain('{{');
        await page.getByTestId('preview-target').selectOption(session ?? '');
        await expect
          .poll(() => page.getByTestId('template-preview').textContent())
          .toContain(e2e.sandbox.project);
        await editor.fill(`${editMarker}\n${original}`);
        await expect.poll(() => page.getByTestId('template-preview').textContent()).toContain(editMarker);
        await page.getByTestId('template-save').click();
        await expect
          .poll(() => page.getByTestId('template-status').textContent(), { timeout: 20_000 })
          .toContain('The bridge reloaded prompt-head.md');
        await expect.poll(() => page.getByTestId('template-in-use').textContent()).toContain('override');
        const overridePath = join(serve.home, '.claude-code-router', 'cursor-templates', 'prompt-head.md');
        expect(await readFile(overridePath, 'utf8')).toBe(`${editMarker}\n${original}`);
        await screenshot(page, 'console-4-saved');

        // The next turn's prompt carries the edit, as the backend received it.
        const second = await e2e.turn('And now?');
        expect(second.exitCode).toBe(0);
        const runs = e2e.bridge.mainRuns();
        expect(runs.length).toBeGreaterThanOrEqual(2);
        expect(runs[0]?.prompt).not.toContain(editMarker);
        expect(runs.at(-1)?.prompt).toContain(editMarker);

        // An unknown placeholder: the error with its suggestion, the save refused, nothing written.
        await editor.fill(`Project: {{rooot}}\n${original}`);
        await expect
          .poll(() => page.getByTestId('template-issues').textContent())
          .toContain('unknown placeholder "rooot" — did you mean "root"?');
        expect(await page.getByTestId('template-save').isDisabled()).toBe(true);
        const forced = await page.evaluate(async () => {
          const response = await fetch('/console/api/templates/prompt-head.md', {
            method: 'PUT',
            headers: { 'content-type': 'application/json', 'x-cursor-bridge-console': '1' },
            body: JSON.stringify({ text: 'Project: {{rooot}}' }),
          });
          return response.status;
        });
        expect(forced).toBe(422);
        expect(await readFile(overridePath, 'utf8')).toBe(`${editMarker}\n${original}`);
        await screenshot(page, 'console-5-invalid');

        // Nothing of the conversation anywhere the console reached: the page, its API answers, its live feed.
        await page.getByTestId('tab-live').click();
        await page.locator('[data-testid=conversation-row]').first().waitFor();
        const pages = [await page.content()];
        await page.getByTestId('tab-grounding').click();
        await page.getByTestId('template-editor').waitFor();
        pages.push(await page.content());
        await until(() => feed.text().includes('event: state'), 'the console feed');
        for (const text of [...pages, ...served, feed.text()]) {
          for (const marker of [promptMarker, answerMarker, toolMarker]) expect(text).not.toContain(marker);
        }
        expect(served.length).toBeGreaterThan(3);
        expect(pageErrors).toEqual([]);
      } finally {
        feedAbort.abort();
        await feed.done;
        await page.close();
      }
    });
  },
);
