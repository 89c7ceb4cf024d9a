/**
 * Acceptance: the real Claude Code CLI through unmodified Claude Code Router 1.0.73 and 2.0.0 (from npm),
 * which loads the `cursor-sdk` transformer from its config and runs the real `@cursor/sdk` in its own process
 * against the fake Cursor backend. Claude Code runs offline in its network namespace; CCR and the backend run
 * on loopback and are stopped by PID.
 *
 * Both reference styles load in one CCR process (`helpers/ccr-bridge.ts`): the plain answer runs under each;
 * the other scenarios run under the version's default route (1.0.73: `"use": ["cursor-sdk"]`, 2.0.0:
 * `"use": [["cursor-sdk", {…}]]`, the style upstream llms drops with "not a constructor").
 */

import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claudeCodeDriver, claudeCodeResult } from '../helpers/e2e/claude-code-driver.js';
import { parseJsonLines, type ClientDriver } from '../helpers/e2e/client-driver.js';
import {
  ccrBridgeStarter,
  ccrProviders,
  startCcrHost,
  type CcrHost,
  type CcrReferenceStyle,
  type CcrVersion,
} from '../helpers/e2e/ccr-bridge.js';
import { installTimeoutMs, prepareE2e, scenarioTimeoutMs, startE2e } from '../helpers/e2e/e2e-harness.js';
import { expectSamePixels, readPngScenario, screenshot } from '../helpers/e2e/image-scenario.js';
import { ensureClient } from '../helpers/e2e/install-clients.js';
import {
  nodeRelease,
  nodeSchedule,
  webSearchPrompt,
  webSearchQuery,
  webSearchScenario,
  webSearchToolResults,
} from '../helpers/e2e/web-search-scenario.js';
import { quoteToolResults, type ModelScenario } from '../helpers/e2e/model-scenario.js';
import { expectToolResults, hasToolCall } from '../helpers/e2e/scenario-assertions.js';
import { rejectedKeyMessage } from '../helpers/e2e/serve-bridge.js';

const answerOf = (stdout: string): string => claudeCodeResult(stdout)?.result ?? '';

/** Claude Code asking for `<provider>,composer-2`, which CCR routes to that provider as is. */
const driverFor = (style: CcrReferenceStyle, allowedTools = 'Bash'): ClientDriver => ({
  ...claudeCodeDriver,
  invocation: (target, prompt, options) => {
    const invocation = claudeCodeDriver.invocation(target, prompt, options);
    const args = invocation.args.map((arg, index) =>
      invocation.args[index - 1] === '--allowedTools' ? allowedTools : arg,
    );
    return { ...invocation, args: [...args, '--model', `${ccrProviders[style]},composer-2`] };
  },
});

const versions: Array<{ version: CcrVersion; defaultStyle: CcrReferenceStyle }> = [
  { version: 'ccr-1', defaultStyle: 'name' },
  { version: 'ccr-2', defaultStyle: 'tuple' },
];

for (const { version, defaultStyle } of versions) {
  describe(
    `Claude Code through ${version} and the cursor-sdk transformer`,
    { timeout: scenarioTimeoutMs },
    () => {
      let host: CcrHost;
      beforeAll(async () => {
        await prepareE2e('claude-code');
        host = await startCcrHost(version, { defaultStyle });
      }, installTimeoutMs);
      afterAll(async () => {
        await host?.close();
      });

      const start = (scenario: ModelScenario, style: CcrReferenceStyle = defaultStyle) =>
        startE2e(driverFor(style), scenario, { startBridge: ccrBridgeStarter(host) });

      for (const style of ['name', 'tuple'] as const) {
        it(`prints a plain answer through the ${style === 'name' ? '"cursor-sdk"' : '["cursor-sdk", {…}]'} reference`, async () => {
          const e2e = await start({ turns: [{ steps: [{ text: `Plain answer via ${style}.` }] }] }, style);
          const run = await e2e.turn('Say something plain.');

          expect(run.exitCode).toBe(0);
          expect(claudeCodeResult(run.stdout)).toMatchObject({
            is_error: false,
            result: `Plain answer via ${style}.`,
          });
          expect(e2e.bridge.mainRuns()).toHaveLength(1);
          expect(e2e.bridge.mainRuns()[0]?.prompt).toContain('Say something plain.');
          expect(e2e.bridge.mainExchanges()[0]?.body).toMatchObject({
            model: `${ccrProviders[style]},composer-2`,
          });
        });
      }

      it("runs Claude Code's WebSearch on Cursor's search: the model gets the references as Links", async () => {
        const e2e = await startE2e(
          driverFor(defaultStyle, 'Bash WebSearch'),
          webSearchScenario({ references: [nodeRelease, nodeSchedule] }),
          { startBridge: ccrBridgeStarter(host) },
        );
        const run = await e2e.turn(webSearchPrompt, { verbose: true });

        expect(run.exitCode).toBe(0);
        const answer = answerOf(run.stdout);
        expect(answer).toContain(`Web search results for query: "${webSearchQuery}"`);
        // CCR's AnthropicTransformer made Anthropic's search blocks of the transformer's citations.
        expect(answer).toContain(JSON.stringify({ title: nodeRelease.title, url: nodeRelease.url }));
        expect(answer).toContain(nodeSchedule.url);
        expect(webSearchToolResults(run.stdout)).toEqual([
          expect.objectContaining({ query: webSearchQuery }),
        ]);
        // Cursor's search ran for the side request, on a run allowed nothing else.
        const side = e2e.bridge
          .runs()
          .filter((backendRun) => backendRun.prompt.includes('<web_search_task>'));
        expect(side).toHaveLength(1);
        expect(side[0]?.toolNames).toEqual([]);
      });

      it('sends a pasted image and the PNG its Read tool returns to the model as pixels', async () => {
        // Pasted: a stream-json image block in the user message.
        const pasted = await start({ turns: [{ steps: [{ text: 'A blue bar.' }] }] });
        const image = await screenshot();
        const pastedPath = join(pasted.sandbox.project, 'shot.png');
        await writeFile(pastedPath, image);
        const first = await pasted.turn('What does this screenshot show?', { images: [pastedPath] });
        expect(first.exitCode, pasted.report()).toBe(0);
        const received = pasted.bridge.mainRuns().flatMap((backendRun) => backendRun.images);
        expect(received).toHaveLength(1);
        await expectSamePixels(received[0], image);

        // Read: an image block inside the tool result (CCR's own unified request JSON-stringifies it; the
        // transformer reads the original Anthropic body).
        const read = await startE2e(driverFor(defaultStyle, 'Bash Read'), readPngScenario, {
          startBridge: ccrBridgeStarter(host),
        });
        const readPath = join(read.sandbox.project, 'shot.png');
        await writeFile(readPath, image);
        const second = await read.turn(`Look at ${readPath} and tell me what it shows.`);
        expect(second.exitCode, read.report()).toBe(0);
        expect(answerOf(second.stdout)).toBe('It is a screenshot with a blue bar.');
        const results = read.bridge.mainRuns().flatMap((backendRun) => backendRun.toolResults);
        expect(results.flatMap((result) => result.images)).toHaveLength(1);
        await expectSamePixels(results[0]?.images[0], image);
      });

      it('shows the thinking block with its signature', async () => {
        const e2e = await start({
          turns: [{ steps: [{ thinking: 'Weighing the CCR question.', text: 'Thought it through.' }] }],
        });
        const run = await e2e.turn('Think first.', { verbose: true });

        expect(run.exitCode).toBe(0);
        const blocks = parseJsonLines(run.stdout)
          .filter((line) => line['type'] === 'assistant')
          .flatMap((line) => (line['message'] as { content?: Array<Record<string, unknown>> }).content ?? []);
        expect(blocks).toContainEqual(
          expect.objectContaining({
            type: 'thinking',
            thinking: 'Weighing the CCR question.',
            signature: expect.stringMatching(/^cursor-bridge\.[\w-]{20,}$/),
          }),
        );
        expect(blocks).toContainEqual(expect.objectContaining({ type: 'text', text: 'Thought it through.' }));
      });

      it('runs a Bash call on the host and answers with its output on the same run', async () => {
        const e2e = await start({
          turns: [
            {
              steps: [
                {
                  thinking: 'A command will tell.',
                  text: 'Running it.',
                  toolCalls: [{ shell: 'echo tool-$((20+22))-ok' }],
                },
                { text: (context) => `The command printed: ${quoteToolResults(context)}` },
              ],
            },
          ],
        });
        const run = await e2e.turn('Run the check command.');

        expect(run.exitCode).toBe(0);
        // `tool-42-ok` exists only if Claude Code really ran the command: the call said `$((20+22))`.
        expect(answerOf(run.stdout)).toContain('The command printed: tool-42-ok');
        expectToolResults(e2e.bridge, [{ text: 'tool-42-ok', isError: false }]);
        // One agent run spans both requests: the second resumed the parked call.
        expect(e2e.bridge.mainRuns()).toHaveLength(1);
        expect(e2e.bridge.mainExchanges()).toHaveLength(2);
        expect(hasToolCall(e2e.bridge.mainExchanges()[0])).toBe(true);
        // Usage reaches Claude Code through CCR's reading of the transformer's stream on both responses:
        // its sum holds the tool-use response's count (the request's thousands of tokens) besides the
        // 120 / 25 the fake's Cursor reports at the run's end.
        const usage = (claudeCodeResult(run.stdout) as { usage?: Record<string, number> } | undefined)?.usage;
        expect(usage?.['input_tokens']).toBeGreaterThan(120 + 1_000);
        expect(usage?.['output_tokens']).toBeGreaterThan(25 + 5);
      });

      it('recovers from a mid-stream failure through a fresh run for its non-streaming retry', async () => {
        const e2e = await start({
          turns: [
            {
              steps: [
                {
                  text: 'Answer after the outage.',
                  // `unavailable` for the SDK's four attempts of the first run (~16 s): the run fails and the
                  // transformer sends the error in-band; the outage is over for the next run.
                  fail: { message: 'E2E: upstream overloaded mid-stream.', code: 'unavailable', attempts: 4 },
                },
              ],
            },
          ],
        });
        const run = await e2e.turn('Answer despite a hiccup.');

        expect(run.exitCode).toBe(0);
        expect(answerOf(run.stdout)).toBe('Answer after the outage.');
        // Through CCR the in-band error reaches Claude Code in AnthropicTransformer's shape, and Claude Code
        // retries the turn without streaming; that retry got a fresh run, not the replayed failure.
        const exchanges = e2e.bridge.mainExchanges();
        expect(exchanges.map((exchange) => (exchange.body as { stream?: boolean }).stream)).toEqual([
          true,
          false,
        ]);
        expect(JSON.stringify(exchanges[0]?.frames)).toContain('upstream overloaded mid-stream');
        // The failed stream ends with its terminal events. Claude Code aborts it as soon as it reads the
        // error event, and the proxy stops recording when its client hangs up, so the end is only seen
        // when the stream finished first (a race of milliseconds, lost in a clean-clone CI run): then
        // it must be complete.
        const first = exchanges[0];
        expect(String(first?.error ?? first?.status)).toMatch(/^200$|client hung up/);
        if (first?.error === undefined) expect(JSON.stringify(first?.frames)).toContain('message_stop');
        else expect(JSON.stringify(first.frames)).toContain('"event":"error"');
        expect(exchanges[1]?.status).toBe(200);
        const runs = e2e.bridge.mainRuns();
        expect(runs.filter((backendRun) => !backendRun.replay).length).toBeGreaterThanOrEqual(1);
        expect(runs.length).toBeGreaterThanOrEqual(5);
      });

      it('continues a conversation on the same agent with a slim prompt (--continue)', async () => {
        const e2e = await start({
          turns: [{ steps: [{ text: 'First answer.' }] }, { steps: [{ text: 'Second answer.' }] }],
        });
        const first = await e2e.turn('First question marker-alpha.');
        expect(first.exitCode).toBe(0);
        const second = await e2e.turn('Second question marker-beta.', { resume: true });

        expect(second.exitCode).toBe(0);
        expect(answerOf(second.stdout)).toBe('Second answer.');
        const [firstRun, secondRun] = e2e.bridge.mainRuns();
        expect(e2e.bridge.mainRuns()).toHaveLength(2);
        expect(secondRun?.agentId).toBe(firstRun?.agentId);
        expect(firstRun?.historyTurns).toBe(0);
        expect(secondRun?.historyTurns).toBe(1);
        expect(firstRun?.prompt).toContain('<client_system_prompt>');
        expect(secondRun?.prompt).toContain('marker-beta');
        expect(secondRun?.prompt).not.toContain('marker-alpha');
        expect(secondRun?.prompt).not.toContain('<client_system_prompt>');
        expect(secondRun?.prompt).not.toContain('<conversation_so_far>');
        // Claude Code really continued: its second request carried the first turn.
        expect(JSON.stringify(e2e.bridge.mainExchanges().at(-1)?.body)).toContain('marker-alpha');
      });
    },
  );

  describe(
    `Claude Code through ${version} with a rejected Cursor key`,
    { timeout: scenarioTimeoutMs },
    () => {
      let host: CcrHost;
      beforeAll(async () => {
        await prepareE2e('claude-code');
        host = await startCcrHost(version, { defaultStyle, auth: 'reject' });
      }, installTimeoutMs);
      afterAll(async () => {
        await host?.close();
      });

      it('stops at once with the reason', async () => {
        const e2e = await startE2e(
          driverFor(defaultStyle),
          { turns: [] },
          { startBridge: ccrBridgeStarter(host) },
        );
        const run = await e2e.turn('Say hi.');

        expect(run.timedOut).toBe(false);
        expect(run.exitCode).not.toBe(0);
        expect(claudeCodeResult(run.stdout)?.is_error).toBe(true);
        expect(answerOf(run.stdout)).toContain(rejectedKeyMessage);
        // One request: CCR passes the 403 on, and Claude Code does not retry it (a bare 401 it would).
        expect(e2e.bridge.turnExchanges()).toHaveLength(1);
        expect(e2e.bridge.turnExchanges()[0]?.status).toBe(403);
        expect(e2e.bridge.runs()).toHaveLength(0);
        expect(e2e.bridge.backendRequests()).toContainEqual({
          method: 'POST',
          path: '/auth/exchange_user_api_key',
        });
      });
    },
  );
}

describe("CCR 2.0.0's fallback on the transformer's errors", { timeout: scenarioTimeoutMs }, () => {
  let host: CcrHost;
  beforeAll(async () => {
    await prepareE2e('claude-code');
    host = await startCcrHost('ccr-2', {
      editConfig: (config) => ({
        ...config,
        Router: { default: `${ccrProviders.name},no-such-model` },
        fallback: { default: [`${ccrProviders.tuple},composer-2`] },
      }),
    });
  }, installTimeoutMs);
  afterAll(async () => {
    await host?.close();
  });

  it('falls back to the next model when the routed one does not exist', async () => {
    // Claude Code's own model name: CCR's Router picks the default route, then its fallback.
    const e2e = await startE2e(
      claudeCodeDriver,
      { turns: [{ steps: [{ text: 'Answered by the fallback.' }] }] },
      { startBridge: ccrBridgeStarter(host) },
    );
    const run = await e2e.turn('Say something.');

    expect(run.exitCode).toBe(0);
    expect(answerOf(run.stdout)).toBe('Answered by the fallback.');
    // One client request: the 404 for no-such-model became provider_response_error inside CCR, which
    // retried the fallback model itself.
    expect(e2e.bridge.turnExchanges()).toHaveLength(1);
    expect(e2e.bridge.mainRuns().map((backendRun) => backendRun.model)).toEqual(['composer-2']);
  });
});

describe('CCR on a Node too old for @cursor/sdk', { timeout: scenarioTimeoutMs }, () => {
  it('logs one line naming the Node version, keeps running and fails Cursor requests with it', async () => {
    const node20 = await ensureClient('node-20');
    const host = await startCcrHost('ccr-1', { node: node20.binaryPath });
    try {
      const response = await fetch(`http://127.0.0.1:${host.port}/v1/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          model: 'x',
          max_tokens: 8,
          stream: true,
          messages: [{ role: 'user', content: 'hi' }],
        }),
      });
      expect(response.status).toBe(500);
      // The one line every entry point of the package gives on an old Node (test/cli/node-entry-points.test.ts).
      expect(await response.text()).toContain('cursor-bridge needs Node.js >= 22.19.0 but runs on v20.20.2');

      const lines = host
        .output()
        .stderr.split('\n')
        .filter((line) => line.includes('cursor-bridge needs Node.js'));
      expect(lines).toEqual([
        expect.stringMatching(
          /^cursor-bridge needs Node\.js >= 22\.19\.0 but runs on v20\.20\.2: run Claude Code Router with Node 22\.19\.0 or newer/,
        ),
      ]);
      // Still serving: not a segfault, not CCR's silent exit.
      expect((await fetch(`http://127.0.0.1:${host.port}/health`)).ok).toBe(true);
    } finally {
      await host.close();
    }
  });
});
