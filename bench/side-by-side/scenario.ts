/**
 * The fake backend's model for the side-by-side bench and the stream probe: a prompt with "use the tool"
 * makes one `Bash` call and answers after its result, "long answer" streams `deltas` small deltas, anything
 * else answers "hello".
 *
 * `BENCH_TOOL_LISTING` sets how the tool batch's size is announced: a `listed` order of the fake
 * (`after-exec`, Cursor's and the default; `after-started`, `before-started`, `none`), or `late:<ms>`, the
 * default order with the listing `<ms>` after the exec (a generation end that reaches the SDK later).
 */

import type { Scenario, ToolBatchOptions } from '../../test/fakes/cursor-backend/index.js';

/** The batch's options, made right before the batch: the fake sends its starts and execs at once. */
const toolBatchOptions = (listing = 'after-exec'): ToolBatchOptions => {
  const late = /^late:(\d+)$/.exec(listing);
  if (late === null) return { listed: listing as NonNullable<ToolBatchOptions['listed']> };
  return { listedAfter: new Promise((resolve) => setTimeout(resolve, Number(late[1]))) };
};

export const benchScenario =
  (deltas: number): Scenario =>
  async (run) => {
    if (run.prompt.includes('use the tool')) {
      const [result] = await run.toolCalls(
        [{ toolName: 'Bash', args: { command: 'true' } }],
        toolBatchOptions(process.env['BENCH_TOOL_LISTING']),
      );
      run.text(`done ${result?.status ?? ''}`);
    } else if (run.prompt.includes('long answer')) {
      for (let index = 0; index < deltas; index += 1) run.text(`d${index} `);
    } else {
      run.text('hello');
    }
    run.turnEnded({ inputTokens: 10, outputTokens: 1 });
  };
