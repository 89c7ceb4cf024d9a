/**
 * The fake backend's model for the side-by-side bench and the stream probe: a prompt with "use the tool"
 * makes one `Bash` call and answers after its result, "long answer" streams `deltas` small deltas, anything
 * else answers "hello".
 */

import type { Scenario } from '../../test/fakes/cursor-backend/index.js';

export const benchScenario =
  (deltas: number): Scenario =>
  async (run) => {
    if (run.prompt.includes('use the tool')) {
      const [result] = await run.toolCalls([{ toolName: 'Bash', args: { command: 'true' } }]);
      run.text(`done ${result?.status ?? ''}`);
    } else if (run.prompt.includes('long answer')) {
      for (let index = 0; index < deltas; index += 1) run.text(`d${index} `);
    } else {
      run.text('hello');
    }
    run.turnEnded({ inputTokens: 10, outputTokens: 1 });
  };
