/**
 * Acceptance: the real Claude Code CLI through unmodified Claude Code Router 3.1.1 (from npm), set up from an
 * empty HOME with `ccr start` and `cursor-bridge ccr install`, with cursor-bridge running as CCR's plugin in
 * CCR's own process and the real `@cursor/sdk` against the fake Cursor backend. Everything runs in one
 * private network namespace (`helpers/ccr3-host.ts`): CCR 3 binds fixed ports.
 *
 * Claude Code asks for its default model (a `claude-*` name) and CCR's rule routes it to the plugin. The
 * Bash command the model asks for saves CCR's config (changed) and restarts its gateway while the call is
 * parked, so its result must reach the same run through a restarted gateway and a re-imported plugin.
 * On the same running CCR: the model's thinking reaches Claude Code's stream-json output, and a client
 * that goes away mid-stream gets its SDK run cancelled (the fake backend sees the run's stream closed);
 * then `ccr stop`.
 */
import { mkdir, readdir, readFile, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { repoRoot } from '../helpers/repo-root.js';
import { claudeCodeDriver, claudeCodeResult } from '../helpers/e2e/claude-code-driver.js';
import { parseJsonLines } from '../helpers/e2e/client-driver.js';
import {
  cursorBridgeBin,
  pluginLogPath,
  startCcr3Host,
  type Ccr3Host,
  type CommandOutcome,
} from '../helpers/e2e/ccr3-host.js';
import { installTimeoutMs } from '../helpers/e2e/e2e-harness.js';
import { createFakeBackendModel } from '../helpers/e2e/fake-backend-model.js';
import { ensureClient } from '../helpers/e2e/install-clients.js';
import { quoteToolResults } from '../helpers/e2e/model-scenario.js';
import {
  nodeRelease,
  nodeSchedule,
  webSearchPrompt,
  webSearchQuery,
  webSearchScenario,
  webSearchToolResults,
} from '../helpers/e2e/web-search-scenario.js';

const testTimeoutMs = 5 * 60_000;

/**
 * A streaming Messages client for CCR's gateway (argv: base URL, API key) that leaves after its first
 * text delta: `process.exit` destroys its socket mid-stream, as a Ctrl-C'd client's does.
 */
const abortingClient = `
const [base, key] = process.argv.slice(1);
const response = await fetch(base + '/v1/messages', {
  method: 'POST',
  headers: { 'content-type': 'application/json', 'x-api-key': key, 'anthropic-version': '2023-06-01' },
  body: JSON.stringify({
    model: 'claude-sonnet-4-5',
    max_tokens: 1024,
    stream: true,
    messages: [{ role: 'user', content: 'Answer at length.' }],
  }),
});
if (!response.ok) {
  process.stderr.write(response.status + ' ' + (await response.text()));
  process.exit(1);
}
const decoder = new TextDecoder();
let seen = '';
for await (const chunk of response.body) {
  seen += decoder.decode(chunk, { stream: true });
  for (const line of seen.split('\\n')) {
    if (!line.startsWith('data:')) continue;
    let event;
    try { event = JSON.parse(line.slice(5)); } catch { continue; }
    if (event.delta?.type === 'text_delta') {
      process.stdout.write('left after: ' + event.delta.text + '\\n');
      process.exit(0);
    }
  }
}
process.stderr.write('the stream ended before a text delta:\\n' + seen);
process.exit(1);
`;

/**
 * The check `ccr "Claude Code"` makes before it starts claude (argv: base URL, API key): GET /v1/models
 * through CCR's gateway as Claude Code; exits 0 on 200.
 */
const gatewayProbe = `
const [base, key] = process.argv.slice(1);
const response = await fetch(base + '/v1/models', {
  headers: { authorization: 'Bearer ' + key, 'user-agent': 'Claude Code' },
});
await response.text();
if (response.status !== 200) {
  process.stderr.write('GET /v1/models: HTTP ' + response.status);
  process.exit(1);
}
`;

/**
 * CCR's launcher refused to start claude because its pre-launch check of the gateway timed out (three
 * tries of 1.2 s each, CCR's own bound): claude never ran.
 */
const launcherCheckTimedOut = (run: CommandOutcome): boolean =>
  run.exitCode !== 0 && /but it cannot serve Claude Code right now \(HTTP 0\)/.test(run.stderr + run.stdout);

/** `promise`, or a rejection naming `what` if it has not settled after `ms` (a safety net, not a timing). */
const withSafetyNet = <T>(promise: Promise<T>, ms: number, what: string): Promise<T> => {
  let timer: NodeJS.Timeout | undefined;
  const net = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`e2e: ${what} (safety net of ${String(ms)} ms)`)), ms);
  });
  return Promise.race([promise, net]).finally(() => clearTimeout(timer));
};

describe('Claude Code through CCR 3.1.1 with the cursor-bridge plugin', { timeout: testTimeoutMs }, () => {
  let host: Ccr3Host | undefined;
  let failed = false;
  const report: string[] = [];
  beforeAll(async () => {
    await ensureClient('claude-code');
    host = await startCcr3Host();
  }, installTimeoutMs);
  afterAll(async () => {
    if ((failed || process.env['E2E_REPORT'] === '1') && host !== undefined)
      console.error([host.describe(), ...report].join('\n'));
    await host?.close();
  });

  /** CCR's APIKEY, read after the install. */
  let apiKey: string | undefined;
  const workspaces = () => join(host!.home, '.claude-code-router', 'cursor-sdk-workspaces');
  const recorded = async (test: () => Promise<void>): Promise<void> => {
    try {
      await test();
    } catch (error) {
      failed = true;
      throw error;
    }
  };
  /**
   * `ccr "Claude Code" -- <args>` inside CCR's namespace and HOME, as a user runs it: CCR's launcher starts
   * `claude` from PATH (the pinned binary) with the settings `ccr start` wrote (`~/.claude/settings.json`: its
   * gateway's URL and `apiKeyHelper`).
   */
  const claudeThroughCcr = async (ccr: Ccr3Host, args: string[]): Promise<CommandOutcome> => {
    const claude = await ensureClient('claude-code');
    const bin = join(ccr.root, 'bin');
    await mkdir(bin, { recursive: true });
    await symlink(claude.binaryPath, join(bin, 'claude')).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== 'EEXIST') throw error;
    });
    // The launcher checks the gateway with a 1.2 s bound per try before it starts claude, a bound a loaded
    // machine can miss: the gateway must first answer that same request (the wait is a safety net), and a
    // launch refused by that check alone, before claude ran, is tried again.
    const launch = async (): Promise<CommandOutcome> => {
      await vi.waitFor(
        async () => {
          const probe = await ccr.run(process.execPath, [
            '--input-type=module',
            '-e',
            gatewayProbe,
            ccr.endpoint.baseUrl,
            apiKey!,
          ]);
          if (probe.exitCode !== 0) throw new Error(`the gateway does not serve yet: ${probe.stderr}`);
        },
        { timeout: 60_000, interval: 500 },
      );
      const run = await ccr.run(process.execPath, [ccr.ccrCli, 'Claude Code', '--', ...args], {
        env: {
          ...ccr.env,
          PATH: `${bin}:${ccr.env['PATH'] ?? '/usr/bin:/bin'}`,
          DISABLE_TELEMETRY: '1',
          CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
          DISABLE_AUTOUPDATER: '1',
        },
        timeoutMs: 180_000,
      });
      report.push(
        `--- ccr "Claude Code" -- ${args.join(' ')}: exit ${String(run.exitCode)}\nstdout:\n${run.stdout}\nstderr:\n${run.stderr}`,
      );
      return run;
    };
    let run = await launch();
    for (let retry = 1; retry <= 2 && launcherCheckTimedOut(run); retry += 1) run = await launch();
    return run;
  };

  it('from an empty HOME: ccr start, cursor-bridge ccr install, a Bash round trip across a gateway restart', async () => {
    const ccr = host!;
    try {
      // 1. ccr start: the service (gateway 3456, admin 3458), with CURSOR_API_KEY / CURSOR_BACKEND_URL in its env.
      const started = await ccr.ccrCommand(['start']);
      expect(started.exitCode, started.stderr).toBe(0);
      // `ccr start` returns once the service answers; the wait is a safety net for a loaded machine.
      const info = await vi.waitFor(() => ccr.rpc('getAppInfo') as Promise<{ version: string }>, {
        timeout: 60_000,
        interval: 250,
      });
      expect(info.version).toBe('3.1.1');

      // CCR's "import a plugin directory" reads the package's `ccr` manifest key.
      expect(await ccr.rpc('selectPluginDirectory', [repoRoot])).toMatchObject({
        id: 'cursor-bridge',
        modulePath: join(repoRoot, 'ccr', 'ccr3-plugin.mjs'),
        permissions: ['trusted-code', 'http-backends'],
        surfaces: { gateway: true, apps: false, provider: false },
      });

      // 2. cursor-bridge ccr install, then again: nothing to do.
      const install = await ccr.run(process.execPath, [cursorBridgeBin, 'ccr', 'install']);
      expect(install.exitCode, `${install.stdout}\n${install.stderr}`).toBe(0);
      expect(install.stdout).toMatch(/provider "cursor": added/);
      expect(install.stdout).toMatch(/plugin "cursor-bridge": added/);
      expect(install.stdout).toMatch(/rule: models starting with "claude"/);
      const again = await ccr.run(process.execPath, [cursorBridgeBin, 'ccr', 'install']);
      expect(again.exitCode, again.stderr).toBe(0);
      expect(again.stdout).toMatch(/already installed; nothing to do/);
      const config = (await ccr.rpc('getConfig')) as { APIKEY: string };
      apiKey = config.APIKEY;

      // 3. The model's Bash call saves a changed config and restarts the gateway while it is parked.
      const script = join(ccr.root, 'reload.sh');
      await writeFile(
        script,
        [
          '#!/bin/sh',
          'set -e',
          `before=$(${ccr.rpcCommand('getGatewayStatus')})`,
          `node_config=$(${ccr.rpcCommand('getConfig')})`,
          // API_TIMEOUT_MS + 1: a real change, so saveConfig restarts the gateway (plugins stop with "reload").
          `changed=$(printf '%s' "$node_config" | ${process.execPath} -e 'let t="";process.stdin.on("data",d=>t+=d).on("end",()=>{const c=JSON.parse(t);c.API_TIMEOUT_MS=(c.API_TIMEOUT_MS??600000)+1;process.stdout.write(JSON.stringify([c]))})')`,
          `${process.execPath} ${ccr.root}/rpc.mjs ${ccr.home} saveConfig "$changed" >/dev/null`,
          `${ccr.rpcCommand('restartGateway')} >/dev/null`,
          `after=$(${ccr.rpcCommand('getGatewayStatus')})`,
          `[ "$before" != "$after" ] && echo "gateway restarted; reload-$((20+22))-ok"`,
        ].join('\n'),
        { mode: 0o755 },
      );
      const model = createFakeBackendModel(
        {
          turns: [
            {
              steps: [
                { text: 'Reloading it.', toolCalls: [{ shell: `sh ${script}` }] },
                { text: (context) => `The command printed: ${quoteToolResults(context)}` },
              ],
            },
          ],
        },
        claudeCodeDriver.shell,
        () => 0,
      );
      ccr.backend.setScenario(model.scenario);

      const run = await claudeThroughCcr(ccr, [
        '-p',
        'Reload the router and tell me what it printed.',
        '--output-format',
        'json',
        '--allowedTools',
        'Bash',
      ]);
      expect(run.exitCode, `${run.stdout}\n${run.stderr}`).toBe(0);
      // `reload-42-ok` exists only if Claude Code ran the command; it reached the model's run after the restart.
      expect(claudeCodeResult(run.stdout)?.result).toContain(
        'The command printed: gateway restarted; reload-42-ok',
      );
      const main = model.played.filter((played) => played.main);
      expect(main).toHaveLength(1);
      expect(main[0]?.toolResults.map((result) => result.text)).toEqual([
        expect.stringContaining('reload-42-ok'),
      ]);
      // One engine for the whole run: built once, kept through the reloads.
      const log = await readFile(pluginLogPath(ccr.home), 'utf8');
      expect(log.match(/"msg":"engine ready"/g)).toHaveLength(1);
      expect(log).not.toContain('Reload the router');
      expect((await readdir(workspaces())).length).toBeGreaterThan(0);

      // `serve` beside the running CCR 3: its own config file, and a busy 3456 that says what to do.
      const serve = await ccr.run(process.execPath, [cursorBridgeBin, 'serve']);
      expect(serve.exitCode).toBe(1);
      expect(serve.stderr).toContain(
        `no config file at ${join(ccr.home, '.config', 'cursor-bridge', 'config.json')}; starting on built-in defaults`,
      );
      expect(serve.stderr).toMatch(
        /127\.0\.0\.1:3456: the port is already in use\. Choose another with --port/,
      );
      expect(serve.stderr).toContain('Claude Code Router 3 listens on 3456–3458');
    } catch (error) {
      failed = true;
      throw error;
    }
  });

  it('shows the thinking block of the model in stream-json output', async () => {
    await recorded(async () => {
      const ccr = host!;
      const model = createFakeBackendModel(
        { turns: [{ steps: [{ thinking: 'Weighing the CCR 3 question.', text: 'Thought it through.' }] }] },
        claudeCodeDriver.shell,
        () => 0,
      );
      ccr.backend.setScenario(model.scenario);
      const run = await claudeThroughCcr(ccr, [
        '-p',
        'Think first.',
        '--output-format',
        'stream-json',
        '--verbose',
      ]);
      expect(run.exitCode, `${run.stdout}\n${run.stderr}`).toBe(0);
      const blocks = parseJsonLines(run.stdout)
        .filter((line) => line['type'] === 'assistant')
        .flatMap((line) => (line['message'] as { content?: Array<Record<string, unknown>> }).content ?? []);
      expect(blocks).toContainEqual(
        expect.objectContaining({ type: 'thinking', thinking: 'Weighing the CCR 3 question.' }),
      );
      expect(blocks).toContainEqual(expect.objectContaining({ type: 'text', text: 'Thought it through.' }));
    });
  });

  it("runs Claude Code's WebSearch on Cursor's search: the model gets the references as Links", async () => {
    await recorded(async () => {
      const ccr = host!;
      const model = createFakeBackendModel(
        webSearchScenario({ references: [nodeRelease, nodeSchedule] }),
        claudeCodeDriver.shell,
        () => 0,
      );
      ccr.backend.setScenario(model.scenario);
      const run = await claudeThroughCcr(ccr, [
        '-p',
        webSearchPrompt,
        '--output-format',
        'stream-json',
        '--verbose',
        '--allowedTools',
        'WebSearch',
      ]);
      expect(run.exitCode, `${run.stdout}\n${run.stderr}`).toBe(0);
      const answer = claudeCodeResult(run.stdout)?.result ?? '';
      expect(answer).toContain(`Web search results for query: "${webSearchQuery}"`);
      expect(answer).toContain(JSON.stringify({ title: nodeRelease.title, url: nodeRelease.url }));
      expect(webSearchToolResults(run.stdout)).toEqual([
        expect.objectContaining({ query: webSearchQuery, searchCount: 1 }),
      ]);
      // CCR 3 passed the server tool through to the plugin: Cursor's search ran, on its own agent.
      const side = model.played.filter((played) => played.searchSideCall === true);
      expect(side.map((played) => played.webSearches.map((search) => search.result))).toEqual([['success']]);
    });
  });

  it('cancels the SDK run when the client goes away mid-stream', async () => {
    await recorded(async () => {
      const ccr = host!;
      // The model keeps streaming until the SDK closes its run's stream: never silent, so the engine's
      // silence bound cannot end the run either; only a cancel closes it.
      let streaming!: () => void;
      const started = new Promise<void>((resolve) => (streaming = resolve));
      let closed!: (run: { open: boolean; aborted: boolean }) => void;
      const ended = new Promise<{ open: boolean; aborted: boolean }>((resolve) => (closed = resolve));
      ccr.backend.setScenario(async (run) => {
        run.text('A long answer begins ');
        streaming();
        await new Promise<void>((resolve) => {
          const more = setInterval(() => {
            if (run.open) run.text('and on ');
          }, 250);
          const stop = (): void => {
            clearInterval(more);
            resolve();
          };
          if (run.signal.aborted) stop();
          run.signal.addEventListener('abort', stop, { once: true });
        });
        closed({ open: run.open, aborted: run.signal.aborted });
      });
      // A streaming client through CCR's gateway (inside the namespace) that leaves after its first text
      // delta: it destroys its socket and exits, as a Ctrl-C'd client does.
      const client = ccr.run(
        process.execPath,
        ['--input-type=module', '-e', abortingClient, ccr.endpoint.baseUrl, apiKey!],
        { timeoutMs: 180_000 },
      );
      await withSafetyNet(started, 180_000, 'the backend run never started streaming');
      const left = await client;
      expect(left.exitCode, `${left.stdout}\n${left.stderr}`).toBe(0);
      expect(left.stdout).toContain('left after: A long answer begins');
      // The run's stream closes because the plugin cancelled it, not because the model ended it.
      expect(await withSafetyNet(ended, 120_000, 'the backend run was never closed')).toEqual({
        open: false,
        aborted: true,
      });
    });
  });

  it('ccr stop: the plugin drains and closes; the install then says what to run', async () => {
    await recorded(async () => {
      const ccr = host!;
      // No scratch workspace is left.
      const stopped = await ccr.ccrCommand(['stop']);
      expect(stopped.exitCode, `${stopped.stdout}\n${stopped.stderr}`).toBe(0);
      expect(await readdir(workspaces()).catch(() => [])).toEqual([]);
      expect(await readFile(pluginLogPath(ccr.home), 'utf8')).toMatch(/"msg":"engine closed"/);

      // With the service stopped, the install says what to run.
      const notRunning = await ccr.run(process.execPath, [cursorBridgeBin, 'ccr', 'install']);
      expect(notRunning.exitCode).toBe(2);
      expect(notRunning.stderr).toContain('Run:\n  ccr start\n  cursor-bridge ccr install\n');
    });
  });
});
