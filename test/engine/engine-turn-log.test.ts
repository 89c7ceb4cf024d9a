import { describe, expect, it } from 'vitest';
import { captureLog } from '../helpers/capture-log.js';
import { collect, createTestEngine, never, request, user } from '../helpers/engine-helpers.js';

describe("a turn's log lines", () => {
  it("carry the turn's session and protocol, the plan at debug level", async () => {
    const { lines, logger } = captureLog('debug');
    const { engine } = createTestEngine(
      // The run cannot start: the engine logs the failure.
      [{ startError: { kind: 'api', message: 'boom', retryable: true } }],
      { logger },
    );
    await collect(await engine.handleTurn(request([user('fail me')]), never));
    await engine.close();
    const planned = lines.find((line) => line['msg'] === 'planned turn');
    const failed = lines.find((line) => line['msg'] === 'turn failed');
    expect(planned).toMatchObject({ protocol: 'anthropic', plan: expect.any(String) });
    expect(failed).toMatchObject({ protocol: 'anthropic', session: planned?.['session'] });
    expect(planned?.['session']).toMatch(/^[0-9a-f]{32}$/);
  });

  it('logs no plan above debug level', async () => {
    const { lines, logger } = captureLog('warn');
    const { engine } = createTestEngine(
      [
        [
          { type: 'text-delta', text: 'hi' },
          { type: 'end', status: 'finished' },
        ],
      ],
      {
        logger,
      },
    );
    await collect(await engine.handleTurn(request([user('hello')]), never));
    await engine.close();
    expect(lines.filter((line) => line['msg'] === 'planned turn')).toEqual([]);
  });
});
