/**
 * Plays a {@link ModelScenario} through the engine's {@link ScriptedUpstream}: one script per run, chosen
 * by whether the run carries the client's shell tool (a main turn) or not (a side request).
 */

import type {
  ScriptContext,
  ScriptedUpstream,
  ScriptStep,
  Script,
} from '../../../src/upstream/scripted/scripted-upstream.js';
import type { UpstreamEvent, UpstreamRunInput } from '../../../src/upstream/upstream-port.js';
import { resolveModelText, type ModelContext, type ModelScenario, type ModelStep } from './model-scenario.js';

/** How the model calls one client's shell tool. */
export type ShellTool = {
  name: string;
  /** The tool input for running `command`. */
  input(command: string): Record<string, unknown>;
};

const usage = (outputTokens: number): UpstreamEvent => ({
  type: 'usage',
  usage: { inputTokens: 120, outputTokens, cacheReadTokens: 0, cacheWriteTokens: 0 },
});

const toModelContext = (context: ScriptContext, workspaceDir: string): ModelContext => ({
  workspaceDir,
  prompt: context.input.prompt.text,
  toolResults: context.toolResults.map((result) => ({
    toolCallId: result.toolCallId,
    text: result.content.map((part) => (part.type === 'text' ? part.text : '[image]')).join('\n'),
    isError: result.isError,
  })),
});

const stepScript = (
  step: ModelStep,
  ids: { run: number; step: number },
  shell: ShellTool,
  workspaceDir: string,
  last: boolean,
): ScriptStep[] => {
  const steps: ScriptStep[] = [];
  if (step.delayMs !== undefined) steps.push({ type: 'delay', ms: step.delayMs });
  if (step.thinking !== undefined) {
    steps.push({ type: 'reasoning-delta', text: step.thinking }, { type: 'reasoning-end' });
  }
  const text = step.text;
  if (text !== undefined) {
    steps.push({
      type: 'emit',
      events: (context) => [
        { type: 'text-delta', text: resolveModelText(text, toModelContext(context, workspaceDir)) },
      ],
    });
  }
  if (step.fail !== undefined) {
    steps.push({ type: 'error', error: step.fail });
    return steps;
  }
  const calls = step.toolCalls ?? [];
  if (calls.length > 0) {
    steps.push({
      type: 'emit',
      events: (context) =>
        calls.map((call, index) => ({
          type: 'tool-call',
          toolCallId: `call_e2e_${ids.run}_${ids.step}_${index + 1}`,
          ...('shell' in call
            ? {
                toolName: shell.name,
                input: shell.input(resolveModelText(call.shell, toModelContext(context, workspaceDir))),
              }
            : { toolName: call.tool, input: call.input }),
        })),
    });
    steps.push(usage(15), { type: 'tool-batch-end' }, { type: 'await-tool-results' });
  }
  if (last) steps.push(usage(25), { type: 'end', status: 'finished' });
  return steps;
};

/**
 * Put `scenario` on `upstream`: pass the returned function as the ScriptedUpstream's source (the
 * upstream is read lazily, so it can be the instance being constructed).
 */
export const createScriptedModel = (
  scenario: ModelScenario,
  shell: ShellTool,
  upstream: () => ScriptedUpstream,
): ((input: UpstreamRunInput, runIndex: number) => Script) => {
  let mainRuns = 0;
  return (input, runIndex) => {
    if (!input.tools.some((tool) => tool.name === shell.name)) {
      return [
        { type: 'text-delta', text: scenario.sideReply ?? 'E2E side answer' },
        usage(5),
        { type: 'end', status: 'finished' },
      ];
    }
    mainRuns += 1;
    const turn = scenario.turns[mainRuns - 1];
    if (turn === undefined) {
      return [
        {
          type: 'error',
          error: { kind: 'api', message: `e2e model: no scripted turn ${mainRuns}`, retryable: false },
        },
      ];
    }
    const workspaceDir = upstream().calls[runIndex]?.sessionOptions.workspaceDir ?? '';
    return turn.steps.flatMap((step, index) =>
      stepScript(
        step,
        { run: mainRuns, step: index + 1 },
        shell,
        workspaceDir,
        index === turn.steps.length - 1,
      ),
    );
  };
};
