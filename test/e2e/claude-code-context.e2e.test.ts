/**
 * Acceptance: interactive Claude Code's `/context`, typed into a real terminal, shows the token counts
 * `cursor-bridge serve` answered on `POST /v1/messages/count_tokens` — not Claude Code's own local estimate,
 * which it falls back to silently when that route fails.
 *
 * Claude Code runs interactively in a pseudo-terminal made by util-linux `script` (no new dependency),
 * offline in its own network namespace like every e2e client, with a fresh HOME whose `~/.claude.json`
 * says onboarding is done, the project is trusted and the API key approved (else it stops at those
 * dialogs). The project's CLAUDE.md is text whose o200k_base count is far from Claude Code's local
 * estimate (about four characters per token), so the "Memory files" figure tells whose count it shows.
 */

import { spawn } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { claudeCodeDriver } from '../helpers/e2e/claude-code-driver.js';
import { e2eApiKey } from '../helpers/e2e/client-driver.js';
import { installTimeoutMs, prepareE2e, scenarioTimeoutMs, startE2e } from '../helpers/e2e/e2e-harness.js';
import { ensureClient } from '../helpers/e2e/install-clients.js';
import { clientPath } from '../helpers/e2e/run-client.js';
import { startServeBridge, type ServeBridge } from '../helpers/e2e/serve-bridge.js';

/** Digits: o200k_base makes a token of every three, Claude Code's estimate one of every four characters. */
const memoryMarker = 'cursor-bridge-e2e-memory';
const memoryText = `${memoryMarker}\n${Array.from({ length: 60 }, (_, index) => String(1_000_003 * (index + 7))).join(' ')}\n`;

const shellQuote = (value: string): string => `'${value.replaceAll("'", "'\\''")}'`;

const escape = String.fromCharCode(27);
const bell = String.fromCharCode(7);
const cursorForward = new RegExp(`${escape}\\[(\\d*)C`, 'g');
const operatingSystemCommand = new RegExp(`${escape}\\][^${bell}${escape}]*(?:${bell}|${escape}\\\\)`, 'g');
const controlSequence = new RegExp(`${escape}\\[[0-9;?<>=]*[ -/]*[@-~]`, 'g');
const otherEscape = new RegExp(`${escape}(?:[()][0-9A-Za-z]|[=>78])`, 'g');

/** Terminal output as text: cursor-forward moves become spaces, every other escape sequence goes. */
const screenText = (raw: string): string =>
  raw
    .replace(cursorForward, (_match, count: string) => ' '.repeat(Number(count || '1')))
    .replace(operatingSystemCommand, '')
    .replace(controlSequence, '')
    .replace(otherEscape, '');

/** The processes `pid` started (Linux `/proc`), for ending the terminal's session. */
const childrenOf = async (pid: number): Promise<number[]> => {
  const text = await readFile(`/proc/${pid}/task/${pid}/children`, 'utf8').catch(() => '');
  return text.split(/\s+/).filter(Boolean).map(Number);
};

type CountExchange = { text: string; inputTokens: number };

describe("Claude Code's /context in a terminal", { timeout: scenarioTimeoutMs }, () => {
  beforeAll(() => prepareE2e('claude-code'), installTimeoutMs);

  it("shows the bridge's count_tokens answers", async () => {
    const client = await ensureClient('claude-code');
    let serve: ServeBridge | undefined;
    const e2e = await startE2e(
      claudeCodeDriver,
      { turns: [] },
      { startBridge: async (options) => (serve = await startServeBridge(options)) },
    );
    const { sandbox, endpoint } = e2e;
    await writeFile(
      join(sandbox.home, '.claude.json'),
      JSON.stringify({
        hasCompletedOnboarding: true,
        theme: 'dark',
        customApiKeyResponses: { approved: [e2eApiKey.slice(-20)], rejected: [] },
        projects: {
          [sandbox.project]: { hasTrustDialogAccepted: true, hasCompletedProjectOnboarding: true },
        },
      }),
    );
    await writeFile(join(sandbox.project, 'CLAUDE.md'), memoryText);

    const wrapped = endpoint.wrap(client.binaryPath, []);
    const commandLine = [wrapped.command, ...wrapped.args].map(shellQuote).join(' ');
    const terminal = spawn('script', ['-q', '-c', commandLine, '/dev/null'], {
      cwd: sandbox.project,
      env: {
        PATH: clientPath,
        HOME: sandbox.home,
        SHELL: '/bin/sh',
        TERM: 'xterm-256color',
        ...claudeCodeDriver.invocation({ sandbox, endpoint }, '').env,
      },
      stdio: ['pipe', 'pipe', 'pipe'],
      detached: true,
    });
    let raw = '';
    terminal.stdout.on('data', (chunk: Buffer) => (raw += chunk.toString('utf8')));
    terminal.stderr.on('data', (chunk: Buffer) => (raw += chunk.toString('utf8')));
    try {
      const waitForScreen = (pattern: RegExp, what: string) =>
        vi.waitFor(
          () => {
            if (!pattern.test(screenText(raw)))
              throw new Error(`waiting for ${what}; the screen:\n${screenText(raw).slice(-3000)}`);
          },
          { timeout: 60_000, interval: 100 },
        );
      await waitForScreen(/auto mode on|for shortcuts|❯/, 'the prompt');
      terminal.stdin.write('/context');
      await waitForScreen(/Show what fills the context/, "the command's menu entry");
      terminal.stdin.write('\r');
      await waitForScreen(/Memory\s*files:\s*[\d.]+k?\b/, 'the context report');

      const counts: CountExchange[] = e2e.bridge.exchanges.flatMap((exchange) => {
        if (!exchange.url.startsWith('/v1/messages/count_tokens')) return [];
        const answer = exchange.json as { input_tokens?: unknown } | undefined;
        if (exchange.status !== 200 || typeof answer?.input_tokens !== 'number') return [];
        return [{ text: JSON.stringify(exchange.body), inputTokens: answer.input_tokens }];
      });
      // Claude Code 2.1.332 sent its /context counts here, and every one was answered.
      expect(counts.length).toBeGreaterThan(10);
      const memory = counts.filter((count) => count.text.includes(memoryMarker));
      expect(memory).toHaveLength(1);
      const bridgeCount = memory[0]!.inputTokens;
      // Far from Claude Code's own estimate, so the figure on screen can only be the bridge's.
      expect(Math.abs(bridgeCount - Math.round(memoryText.length / 4))).toBeGreaterThan(40);
      const shown = /Memory\s*files:\s*([\d.]+)(k?)\b/.exec(screenText(raw));
      expect(shown?.[2]).toBe('');
      expect(Number(shown?.[1])).toBe(bridgeCount);

      // The bridge's access log has one line for each of those requests. The lines reach this process through
      // the bridge's stdout, after the answers the recorded exchanges saw: wait for them.
      const readAccessLines = (): string[] =>
        (serve?.output().stdout ?? '')
          .split('\n')
          .filter((line) => line.includes('"msg":"request"') && line.includes('/v1/messages/count_tokens'));
      await vi.waitFor(() => expect(readAccessLines().length).toBe(counts.length), {
        timeout: 30_000,
        interval: 100,
      });
      const accessLines = readAccessLines();
      for (const line of accessLines) {
        expect(JSON.parse(line)).toMatchObject({ method: 'POST', status: 200, protocol: 'anthropic' });
        expect(line).not.toContain(memoryMarker);
      }
    } finally {
      // Claude Code leaves on a second Ctrl-C; its session (the terminal's child, a session and process
      // group leader) is killed if it has not gone by then, so nothing writes into HOME once it is removed.
      const session = terminal.pid === undefined ? [] : await childrenOf(terminal.pid);
      const closed = new Promise<void>((resolve) => {
        if (terminal.exitCode !== null || terminal.signalCode !== null) resolve();
        else terminal.once('close', () => resolve());
      });
      terminal.stdin.write('\x03');
      terminal.stdin.write('\x03');
      const timer = setTimeout(() => {
        for (const pid of [...session, terminal.pid]) {
          if (pid === undefined) continue;
          try {
            process.kill(-pid, 'SIGKILL');
          } catch {
            // already gone
          }
        }
      }, 15_000);
      await closed;
      clearTimeout(timer);
      for (const pid of session) {
        try {
          process.kill(-pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
    }
  });
});
