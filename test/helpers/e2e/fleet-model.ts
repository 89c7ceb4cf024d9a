/**
 * The model of a fleet's working day, for the scale-out reliability tests and benches: one fake-backend
 * scenario per `serve` process, all writing to one record, so a test sees which process and which agent
 * played each turn of each conversation, and what each run received.
 *
 * The model is a function of the prompt alone, so it plays a conversation the same way on the agent that
 * holds it and on a fresh agent that a moved conversation is replayed to. User turn T of conversation C
 * says `Turn T of C: run N steps.`; the model calls the client's shell tool once per step
 * (`run-step C T S`), skipping the steps whose results the prompt already carries (a replay in the middle
 * of a turn carries them as transcript text), then answers `C answer T: <each step's result>`. A tool result
 * that never reached a model shows as a step run twice or as a wrong answer.
 *
 * A turn whose user message asks for a slow answer (`slowly`) sends the first half of its answer, waits
 * {@link slowAnswerMs}, then sends the rest: a process that dies in between cuts a stream mid-answer.
 */

import { randomBytes } from 'node:crypto';
import type { FakeToolResult, RunContext, Scenario } from '../../fakes/cursor-backend/index.js';
import { sleep } from '../../../lib/sleep.js';

/** How long a slow answer pauses between its halves. */
export const slowAnswerMs = 1_500;

/** The result text the client returns for a step, and the model reads back. */
export const stepResult = (conversation: string, turn: number, step: number): string =>
  `${conversation} t${turn} s${step} ok`;

/** The shell command the model sends for a step. */
export const stepCommand = (conversation: string, turn: number, step: number): string =>
  `run-step ${conversation} ${turn} ${step}`;

/** The user message of turn `turn`. */
export const turnMessage = (conversation: string, turn: number, steps: number, slowly: boolean): string =>
  `Turn ${turn} of ${conversation}: run ${steps} steps${slowly ? ', then answer slowly' : ''}.`;

/** The answer of a turn whose every step result reached the model. */
export const expectedAnswer = (conversation: string, turn: number, steps: number): string =>
  `${conversation} answer ${turn}: ${Array.from({ length: steps }, (_, index) => stepResult(conversation, turn, index + 1)).join(', ')}`;

/** One run a process's backend played. */
export type FleetRun = {
  conversation: string;
  turn: number;
  /** The index of the cluster member whose backend played it. */
  process: number;
  /** The Cursor agent (the run request's `conversationId`). */
  agentId: string;
  /** Step results the prompt already carried when the run started (a mid-turn replay). */
  carried: string[];
  /** Results the run received as tool results, in order. */
  received: string[];
  /** Whether an earlier turn of the conversation reached this run as transcript text (a replay). */
  replay: boolean;
  outcome: 'open' | 'answered' | 'closed';
};

export type FleetModel = {
  /** The scenario for cluster member `process` (every restart of it gets a fresh one). */
  scenario(process: number): Scenario;
  runs: FleetRun[];
  /** The member whose backend played the conversation's latest run. */
  processOf(conversation: string): number | undefined;
};

const turnPattern = /Turn (\d+) of (fleet-\d+): run (\d+) steps(, then answer slowly)?\./g;

const resultText = (result: FakeToolResult): string =>
  result.status === 'success'
    ? result.content.map((part) => (part.type === 'text' ? part.text : '[image]')).join('')
    : `[${result.status}]`;

export const createFleetModel = (): FleetModel => {
  const runs: FleetRun[] = [];
  const latest = new Map<string, FleetRun>();

  const play = async (run: RunContext, process: number): Promise<void> => {
    const marker = [...run.prompt.matchAll(turnPattern)].at(-1);
    if (marker === undefined) throw new Error(`fleet model: no turn marker in ${run.prompt.slice(-400)}`);
    const [, turnText = '', conversation = '', stepsText = '', slowly] = marker;
    const turn = Number(turnText);
    const steps = Number(stepsText);
    const shell = run.request.mcpTools[0]?.toolName;
    if (shell === undefined) throw new Error(`fleet model: ${conversation} offered no tool`);
    const results: string[] = [];
    for (let step = 1; step <= steps; step += 1) {
      const result = stepResult(conversation, turn, step);
      if (!run.prompt.includes(result)) break;
      results.push(result);
    }
    const record: FleetRun = {
      conversation,
      turn,
      process,
      agentId: run.request.conversationId,
      carried: [...results],
      received: [],
      replay: turn > 1 && run.prompt.includes(`${conversation} answer ${turn - 1}:`),
      outcome: 'open',
    };
    runs.push(record);
    latest.set(conversation, record);
    run.signal.addEventListener('abort', () => {
      if (record.outcome === 'open') record.outcome = 'closed';
    });
    for (let step = results.length + 1; step <= steps; step += 1) {
      const [result] = await run.toolCalls([
        {
          toolName: shell,
          // A fresh id per call: a step the model had to ask for again would be a new call to the client.
          callId: `call_${randomBytes(6).toString('hex')}`,
          args: { command: stepCommand(conversation, turn, step) },
        },
      ]);
      if (result === undefined) throw new Error(`fleet model: ${conversation} step ${step} got no result`);
      const text = resultText(result);
      record.received.push(text);
      // Codex wraps a command's output in a header block: the model reads the result out of it.
      results.push(
        text.includes(stepResult(conversation, turn, step)) ? stepResult(conversation, turn, step) : text,
      );
    }
    const answer = `${conversation} answer ${turn}: ${results.join(', ')}`;
    if (slowly === undefined) {
      run.text(answer);
    } else {
      const half = Math.floor(answer.length / 2);
      run.text(answer.slice(0, half));
      await sleep(slowAnswerMs, { signal: run.signal });
      if (run.signal.aborted) return;
      run.text(answer.slice(half));
    }
    run.turnEnded({ inputTokens: 10, outputTokens: 5 });
    record.outcome = 'answered';
  };

  return {
    scenario: (process) => (run) => play(run, process),
    runs,
    processOf: (conversation) => latest.get(conversation)?.process,
  };
};
