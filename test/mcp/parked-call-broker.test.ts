import { afterEach, describe, expect, it, vi } from 'vitest';
import { ParkedCallBroker } from '../../mcp/parked-call-broker.js';
import type { ParkedCall } from '../../mcp/parked-call-broker.js';
import { createTextResult } from '../../mcp/tool-call-result.js';
import type { ToolCallResult } from '../../mcp/tool-call-result.js';

const call = (toolCallId: string, toolName = 'Read') => ({
  toolCallId,
  toolName,
  args: { path: `/p/${toolCallId}` },
});

/** Resolves to 'pending' when the promise has not settled after the microtask queue drained. */
async function peek(promise: Promise<ToolCallResult>): Promise<ToolCallResult | 'pending'> {
  return Promise.race([promise, new Promise<'pending'>((resolve) => setImmediate(() => resolve('pending')))]);
}

afterEach(() => {
  vi.useRealTimers();
});

describe('ParkedCallBroker', () => {
  it('parks a call, announces it once and resolves it with the given result', async () => {
    const broker = new ParkedCallBroker();
    const announced: ParkedCall[] = [];
    broker.onParked((parked) => announced.push(parked));
    const result = broker.park(call('a'));
    expect(await peek(result)).toBe('pending');
    expect(announced).toMatchObject([{ toolCallId: 'a', toolName: 'Read', args: { path: '/p/a' } }]);
    expect(typeof announced[0]?.parkedAt).toBe('number');
    expect(broker.pending()).toEqual(['a']);
    expect(broker.status('a')).toBe('pending');
    expect(broker.get('a')?.toolName).toBe('Read');

    expect(broker.resolve('a', createTextResult('file body'))).toBe(true);
    expect(await result).toEqual(createTextResult('file body'));
    expect(broker.pending()).toEqual([]);
    expect(broker.status('a')).toBe('settled');
    expect(broker.get('a')).toBeUndefined();
  });

  it('is idempotent by toolCallId: one announcement, both callers get the same result', async () => {
    const broker = new ParkedCallBroker();
    const announced: string[] = [];
    broker.onParked((parked) => announced.push(parked.toolCallId));
    const first = broker.park(call('dup'));
    const second = broker.park(call('dup'));
    expect(second).toBe(first);
    expect(announced).toEqual(['dup']);
    broker.resolve('dup', createTextResult('once'));
    expect(await first).toEqual(createTextResult('once'));
    expect(await second).toEqual(createTextResult('once'));

    // After settlement a repeated park returns the settled result, still without an announcement.
    expect(await broker.park(call('dup'))).toEqual(createTextResult('once'));
    expect(announced).toEqual(['dup']);
  });

  it('ignores settling unknown or already settled ids', async () => {
    const broker = new ParkedCallBroker();
    const result = broker.park(call('x'));
    expect(broker.resolve('nope', createTextResult('?'))).toBe(false);
    expect(broker.reject('x', 'denied by user')).toBe(true);
    expect(broker.resolve('x', createTextResult('late'))).toBe(false);
    expect(await result).toEqual({ content: [{ type: 'text', text: 'denied by user' }], isError: true });
  });

  it('reject takes an Error and uses its message', async () => {
    const broker = new ParkedCallBroker();
    const result = broker.park(call('e'));
    broker.reject('e', new Error('boom'));
    expect(await result).toEqual({ content: [{ type: 'text', text: 'boom' }], isError: true });
  });

  it('announces calls in park order to listeners and iterators, and a listener may settle synchronously', async () => {
    const broker = new ParkedCallBroker();
    const iterator = broker.parkedCalls();
    const order: string[] = [];
    broker.onParked((parked) => {
      order.push(parked.toolCallId);
      if (parked.toolCallId === 'sync') broker.resolve('sync', createTextResult('immediate'));
    });
    const results = ['one', 'two', 'sync', 'three'].map((id) => broker.park(call(id)));
    expect(order).toEqual(['one', 'two', 'sync', 'three']);
    expect(await results[2]).toEqual(createTextResult('immediate'));
    const fromIterator: string[] = [];
    for (let index = 0; index < 4; index += 1) {
      const next = await iterator.next();
      if (!next.done) fromIterator.push(next.value.toolCallId);
    }
    expect(fromIterator).toEqual(['one', 'two', 'sync', 'three']);
    expect(broker.pending()).toEqual(['one', 'two', 'three']);
  });

  it('a throwing listener does not break park or other listeners, and is logged', async () => {
    const warnings: unknown[] = [];
    const broker = new ParkedCallBroker({ logger: { warn: (...args: unknown[]) => warnings.push(args) } });
    const seen: string[] = [];
    broker.onParked(() => {
      throw new Error('listener bug');
    });
    broker.onParked((parked) => seen.push(parked.toolCallId));
    const result = broker.park(call('t'));
    expect(seen).toEqual(['t']);
    expect(warnings).toHaveLength(1);
    broker.resolve('t', createTextResult('fine'));
    expect(await result).toEqual(createTextResult('fine'));
  });

  it('unsubscribes listeners and ends iterators on abort', async () => {
    const broker = new ParkedCallBroker();
    const seen: string[] = [];
    const unsubscribe = broker.onParked((parked) => seen.push(parked.toolCallId));
    const controller = new AbortController();
    const iterator = broker.parkedCalls({ signal: controller.signal });
    void broker.park(call('before'));
    unsubscribe();
    controller.abort();
    void broker.park(call('after'));
    expect(seen).toEqual(['before']);
    expect(await iterator.next()).toMatchObject({ done: false, value: { toolCallId: 'before' } });
    expect(await iterator.next()).toEqual({ done: true, value: undefined });
  });

  it('settleAll settles every pending call with an isError result naming the reason', async () => {
    const broker = new ParkedCallBroker();
    const results = ['a', 'b', 'c'].map((id) => broker.park(call(id, `tool_${id}`)));
    broker.resolve('b', createTextResult('done'));
    expect(broker.settleAll('the client cancelled the request')).toEqual(['a', 'c']);
    const [a, b, c] = await Promise.all(results);
    expect(b).toEqual(createTextResult('done'));
    for (const [result, name] of [
      [a, 'tool_a'],
      [c, 'tool_c'],
    ] as const) {
      expect(result?.isError).toBe(true);
      expect(result?.content[0]).toEqual({
        type: 'text',
        text: `Tool call "${name}" was abandoned before the tool host answered: the client cancelled the request.`,
      });
    }
    expect(broker.pending()).toEqual([]);
    // The broker stays usable after settleAll.
    const next = broker.park(call('d'));
    broker.resolve('d', createTextResult('again'));
    expect(await next).toEqual(createTextResult('again'));
  });

  it('close settles pending calls, refuses new ones without announcing, and ends iterators', async () => {
    const broker = new ParkedCallBroker();
    const iterator = broker.parkedCalls();
    const announced: string[] = [];
    broker.onParked((parked) => announced.push(parked.toolCallId));
    const pending = broker.park(call('p'));
    broker.close('session evicted.');
    broker.close('again');
    expect((await pending).content[0]).toEqual({
      type: 'text',
      text: 'Tool call "Read" was abandoned before the tool host answered: session evicted.',
    });
    const late = await broker.park(call('late'));
    expect(late.isError).toBe(true);
    expect(announced).toEqual(['p']);
    expect(await iterator.next()).toMatchObject({ done: false, value: { toolCallId: 'p' } });
    expect(await iterator.next()).toEqual({ done: true, value: undefined });
    expect((await broker.parkedCalls().next()).done).toBe(true);
  });

  it('settles a call with an error result at its deadline and not before', async () => {
    vi.useFakeTimers();
    const broker = new ParkedCallBroker({ deadlineMs: 1000 });
    const timed = broker.park(call('slow', 'Bash'));
    const overridden = broker.park(call('fast'), { deadlineMs: 100 });
    const unlimited = broker.park(call('forever'), { deadlineMs: Number.POSITIVE_INFINITY });
    await vi.advanceTimersByTimeAsync(99);
    expect(broker.pending()).toEqual(['slow', 'fast', 'forever']);
    await vi.advanceTimersByTimeAsync(1);
    expect(broker.pending()).toEqual(['slow', 'forever']);
    expect((await overridden).isError).toBe(true);
    await vi.advanceTimersByTimeAsync(900);
    expect(await timed).toEqual({
      content: [
        {
          type: 'text',
          text: 'Tool call "Bash" timed out after 1000 ms without a result from the tool host.',
        },
      ],
      isError: true,
    });
    await vi.advanceTimersByTimeAsync(10 * 24 * 3600 * 1000);
    expect(broker.pending()).toEqual(['forever']);
    broker.resolve('forever', createTextResult('finally'));
    expect(await unlimited).toEqual(createTextResult('finally'));
  });

  it('a settled call does not time out later, and has no deadline by default', async () => {
    vi.useFakeTimers();
    const broker = new ParkedCallBroker({ deadlineMs: 50 });
    const result = broker.park(call('quick'));
    broker.resolve('quick', createTextResult('in time'));
    await vi.advanceTimersByTimeAsync(100);
    expect(await result).toEqual(createTextResult('in time'));
    expect(vi.getTimerCount()).toBe(0);

    const noDeadline = new ParkedCallBroker();
    void noDeadline.park(call('idle'));
    expect(vi.getTimerCount()).toBe(0);
    await vi.advanceTimersByTimeAsync(3_600_000);
    expect(noDeadline.pending()).toEqual(['idle']);
  });

  it('remembers a bounded number of settled ids', async () => {
    const broker = new ParkedCallBroker({ settledMemory: 2 });
    for (const id of ['1', '2', '3']) {
      void broker.park(call(id));
      broker.resolve(id, createTextResult(`r${id}`));
    }
    expect(broker.status('1')).toBe('unknown');
    expect(broker.status('3')).toBe('settled');
    expect(await broker.park(call('3'))).toEqual(createTextResult('r3'));
  });

  it('never leaks a call: 1000 calls settled every way end with nothing pending and no timers', async () => {
    vi.useFakeTimers();
    const broker = new ParkedCallBroker({ settledMemory: 10 });
    const announced = new Set<string>();
    broker.onParked((parked) => announced.add(parked.toolCallId));
    const ids = Array.from({ length: 1000 }, (_, index) => `call-${index}`);
    const results = ids.map((id, index) => {
      const deadlineMs = index % 4 === 2 ? 10 : undefined;
      const parked = deadlineMs === undefined ? broker.park(call(id)) : broker.park(call(id), { deadlineMs });
      if (index % 3 === 0) void broker.park(call(id)); // duplicate attach
      return parked;
    });
    ids.forEach((id, index) => {
      if (index % 4 === 0) broker.resolve(id, createTextResult(id));
      if (index % 4 === 1) broker.reject(id, `no ${id}`);
    });
    await vi.advanceTimersByTimeAsync(10);
    broker.settleAll('shutdown');
    const settled = await Promise.all(results);
    expect(settled).toHaveLength(1000);
    settled.forEach((result, index) => {
      if (index % 4 === 0) expect(result).toEqual(createTextResult(`call-${index}`));
      else expect(result.isError).toBe(true);
    });
    expect(settled[2]?.content[0]).toMatchObject({ text: expect.stringContaining('timed out') });
    expect(settled[3]?.content[0]).toMatchObject({ text: expect.stringContaining('shutdown') });
    expect(announced.size).toBe(1000);
    expect(broker.pending()).toEqual([]);
    expect(vi.getTimerCount()).toBe(0);
  });
});
