/**
 * Acceptance: the `serve` process holding a conversation dies by SIGKILL (no drain, as the OOM killer
 * ends it) while the real client (Claude Code, Codex, OpenCode; offline in its own network namespace)
 * talks to three bridges behind the real HAProxy (`deploy/haproxy/haproxy.cfg`). The model calls the
 * client's shell tool once; the command appends a line to a file of the client's project, so the line
 * count is how often the tool ran.
 *
 * - Tool call parked: the client runs the tool while its process dies. The result request meets a refused
 *   connection, HAProxy sends it to another process (`option redispatch`), which does not know the
 *   conversation and replays the transcript the client sent to a fresh agent, the tool result as text.
 *   The client sees no error and does not retry.
 * - Mid-stream: the process dies while the client reads the answer that follows the tool result, after
 *   part of it. HAProxy cuts the body; every client retries the same request by itself, streaming,
 *   which lands on another process and completes by the same replay. What the user sees differs: Claude
 *   Code reports an `api_retry` event (stream-json), Codex a "Reconnecting... 1/5" error event, OpenCode
 *   nothing; none shows the cut partial answer, and none runs the tool again.
 *
 * The final answer quotes the tool output only when the replayed prompt carried it.
 */

import { beforeAll, describe, expect, it } from 'vitest';
import { claudeCodeDriver, claudeCodeResult } from '../helpers/e2e/claude-code-driver.js';
import { parseJsonLines, type ClientDriver, type TurnOptions } from '../helpers/e2e/client-driver.js';
import { codexAgentMessages, codexDriver } from '../helpers/e2e/codex-driver.js';
import { installTimeoutMs, prepareE2e } from '../helpers/e2e/e2e-harness.js';
import { ensureHaproxy } from '../helpers/e2e/haproxy-lb.js';
import {
  answerFrom,
  partialTexts,
  runKilledProcessCase,
  toolOutput,
  type KilledProcessCase,
  type KillPoint,
} from '../helpers/e2e/killed-process.js';
import { opencodeDriver, opencodeText } from '../helpers/e2e/opencode-driver.js';
import type { RecordedExchange } from '../helpers/e2e/e2e-bridge.js';
import { frameText } from '../helpers/e2e/scenario-assertions.js';

type Client = {
  driver: ClientDriver;
  turn?: TurnOptions;
  extraInput?: Record<string, unknown>;
  /** Every assistant text the client showed, in order. */
  texts(stdout: string): string[];
  /** The final answer the client printed. */
  finalText(stdout: string): string | undefined;
  /** The retry notices (or errors) the client printed, as text. */
  notices(stdout: string): string[];
};

const claudeCode: Client = {
  driver: claudeCodeDriver,
  // stream-json shows every assistant message and the client's own `api_retry` events.
  turn: { verbose: true },
  texts: (stdout) =>
    parseJsonLines(stdout).flatMap((event) => {
      const message = event['message'] as { content?: Array<{ type?: string; text?: string }> } | undefined;
      return event['type'] === 'assistant'
        ? (message?.content ?? []).flatMap((part) => (part.type === 'text' ? [part.text ?? ''] : []))
        : [];
    }),
  finalText: (stdout) => claudeCodeResult(stdout)?.result,
  notices: (stdout) =>
    parseJsonLines(stdout).flatMap((event) =>
      event['type'] === 'system' && event['subtype'] !== 'init'
        ? [
            `${String(event['subtype'])} ${String(event['attempt'])}/${String(event['max_retries'])}: ` +
              `${String(event['error'])} (status ${String(event['error_status'])})`,
          ]
        : event['type'] === 'result' && event['is_error'] === true
          ? [`result error: ${String(event['result'])}`]
          : [],
    ),
};

const codex: Client = {
  driver: codexDriver,
  // Appending to a file of the project needs the workspace-write sandbox.
  turn: { allowWrites: true },
  // The tool waits for the test's release: keep Codex from returning early with a running session.
  extraInput: { yield_time_ms: 30_000 },
  texts: (stdout) => codexAgentMessages(stdout),
  finalText: (stdout) => codexAgentMessages(stdout).at(-1),
  notices: (stdout) =>
    parseJsonLines(stdout).flatMap((event) =>
      event['type'] === 'error'
        ? [String(event['message'])]
        : event['type'] === 'turn.failed'
          ? [`turn.failed: ${JSON.stringify(event['error'])}`]
          : [],
    ),
};

const opencode: Client = {
  driver: opencodeDriver,
  texts: (stdout) => opencodeText(stdout).split('\n'),
  finalText: (stdout) => opencodeText(stdout).split('\n').at(-1),
  notices: (stdout) =>
    parseJsonLines(stdout).flatMap((event) =>
      event['type'] === 'error' ? [JSON.stringify(event['error'] ?? event)] : [],
    ),
};

const transcriptOf = (exchange: RecordedExchange | undefined): unknown => {
  const body = (exchange?.body ?? {}) as { messages?: unknown; input?: unknown };
  return body.messages ?? body.input;
};

const streamFlags = (exchanges: readonly RecordedExchange[]): unknown[] =>
  exchanges.map((exchange) => (exchange.body as { stream?: unknown } | undefined)?.stream);

/** A terminal event of any of the three protocols. */
const terminalEvent = /message_stop|response\.completed|\[DONE\]/;
/** The recording proxy's note for a response whose client closed the connection first. */
const clientHungUp = 'the client hung up before the response ended';

const run = async (client: Client, killPoint: KillPoint): Promise<KilledProcessCase> => {
  const outcome = await runKilledProcessCase(client.driver, killPoint, {
    ...(client.turn === undefined ? {} : { turn: client.turn }),
    ...(client.extraInput === undefined ? {} : { extraInput: client.extraInput }),
  });
  const { run: clientRun, bridge, victim } = outcome;

  // The process playing the turn died by SIGKILL, and the client finished the turn anyway.
  expect(outcome.victimExit).toEqual({ code: null, signal: 'SIGKILL' });
  expect(clientRun.timedOut).toBe(false);
  expect(clientRun.exitCode).toBe(0);
  expect(client.finalText(clientRun.stdout)).toBe(`Final answer: the tool printed ${toolOutput}.`);
  // The tool ran once: neither the kill nor a retry made the client run it again.
  expect(outcome.toolRuns).toBe(1);

  // Two main runs: the one the kill ended, and a replay on another process for a fresh agent.
  const runs = bridge.model.runs.filter((candidate) => candidate.main);
  expect(runs).toHaveLength(2);
  const [killed, replay] = runs;
  expect(killed).toMatchObject({ process: victim, killPoint: true, outcome: 'closed-by-client' });
  expect(killed?.toolResults.map((result) => result.text.includes(toolOutput))).toEqual(
    killPoint === 'mid-stream' ? [true] : [],
  );
  expect(replay).toMatchObject({ killPoint: false, outcome: 'answered' });
  expect(replay?.process).not.toBe(victim);
  expect(replay?.request.conversationId).not.toBe(killed?.request.conversationId);
  const prompt = replay?.request.text ?? '';
  // The whole transcript, the tool call and its result as text, reached the fresh agent.
  expect(prompt).toContain('marker-alpha');
  expect(prompt).toMatch(/<tool_call id="call_killed_1"/);
  expect(prompt).toMatch(/<tool_result id="call_killed_1"[^>]*>[^]*tool-out-42[^]*<\/tool_result>/);
  expect(answerFrom(prompt)).toBe(client.finalText(clientRun.stdout));
  const survivor = bridge.cluster.bridges[replay?.process ?? -1];
  expect(await survivor?.metrics()).toMatchObject({ replayed: 1, finishedTurns: 1 });
  return outcome;
};

/** The tool call parked when the process died: the result went elsewhere once, no error, no retry. */
const expectParkedCallRecovered = async (client: Client): Promise<void> => {
  const outcome = await run(client, 'tool-parked');
  const exchanges = outcome.bridge.mainExchanges();
  // The call's answer, then the result, sent once and answered in full (to its terminal event: Codex
  // closes its connection as soon as it has read `response.completed`, so the proxy may see it hang up
  // after the last frame).
  expect(
    exchanges.map((exchange) => [exchange.status ?? exchange.error, terminalEvent.test(frameText(exchange))]),
  ).toEqual([
    [expect.toBeOneOf([200, clientHungUp]), true],
    [expect.toBeOneOf([200, clientHungUp]), true],
  ]);
  expect(streamFlags(exchanges)).toEqual([true, true]);
  expect(client.notices(outcome.run.stdout)).toEqual([]);
  // What the model said before the call came back as the transcript's assistant text.
  expect(outcome.bridge.model.runs.at(-1)?.request.text).toContain(partialTexts['tool-parked']);
};

/**
 * The answer cut mid-body: the client sent the same request again by itself (streaming), it completed on
 * another process, and the partial answer was dropped rather than shown.
 */
const expectCutStreamRetried = async (client: Client): Promise<string[]> => {
  const outcome = await run(client, 'mid-stream');
  const exchanges = outcome.bridge.mainExchanges();
  expect(exchanges).toHaveLength(3);
  const [call, cut, retry] = exchanges;
  expect(call?.status).toBe(200);
  // The cut response never ended: part of the answer, no terminal event.
  expect(cut?.status).toBeUndefined();
  expect(frameText(cut)).toContain(partialTexts['mid-stream']);
  expect(frameText(cut)).not.toMatch(terminalEvent);
  // The retry: the same transcript, streaming, answered in full.
  expect(streamFlags(exchanges)).toEqual([true, true, true]);
  expect(transcriptOf(retry)).toEqual(transcriptOf(cut));
  expect(frameText(retry)).toContain(`the tool printed ${toolOutput}`);
  expect(frameText(retry)).toMatch(terminalEvent);
  expect(outcome.bridge.model.runs.at(-1)?.request.text).not.toContain(partialTexts['mid-stream']);
  expect(client.texts(outcome.run.stdout).join('\n')).not.toContain(partialTexts['mid-stream']);
  return client.notices(outcome.run.stdout);
};

describe('a bridge process killed (SIGKILL) behind HAProxy', { timeout: 150_000 }, () => {
  beforeAll(async () => {
    await Promise.all([
      prepareE2e('claude-code'),
      prepareE2e('codex'),
      prepareE2e('opencode'),
      ensureHaproxy(),
    ]);
  }, installTimeoutMs);

  describe('Claude Code', () => {
    it('with a tool call parked: the result completes on another process by replay, no error', async () => {
      await expectParkedCallRecovered(claudeCode);
    });

    it('mid-stream: retries once after an api_retry event and completes on another process', async () => {
      const notices = await expectCutStreamRetried(claudeCode);
      // The client's own notice: a retry with no HTTP status (the connection broke).
      expect(notices).toEqual(['api_retry 1/10: unknown (status null)']);
    });
  });

  describe('Codex', () => {
    it('with a tool call parked: the result completes on another process by replay, no error', async () => {
      await expectParkedCallRecovered(codex);
    });

    it('mid-stream: reconnects once (an error event saying so) and completes on another process', async () => {
      const notices = await expectCutStreamRetried(codex);
      expect(notices).toHaveLength(1);
      expect(notices[0]).toMatch(/^Reconnecting\.\.\. 1\/5 \(stream disconnected before completion: /);
    });
  });

  describe('OpenCode', () => {
    it('with a tool call parked: the result completes on another process by replay, no error', async () => {
      await expectParkedCallRecovered(opencode);
    });

    it('mid-stream: retries silently and completes on another process', async () => {
      expect(await expectCutStreamRetried(opencode)).toEqual([]);
    });
  });
});
