import { describe, expect, it } from 'vitest';
import { ToolCallLedger } from '../../src/upstream/tool-call-ledger.js';

const park = (ledger: ToolCallLedger, toolCallId: string, toolName: string, args: unknown = {}) =>
  ledger.park({ toolCallId, toolName, args });

describe('ToolCallLedger matching', () => {
  it('pairs a parked call with the started call of the same id first', () => {
    const ledger = new ToolCallLedger();
    ledger.started('a', 'Bash', { command: 'ls' });
    ledger.started('b', 'Bash', { command: 'ls' });
    expect(park(ledger, 'b', 'Bash', { command: 'ls' })).toMatchObject({ sdkCallId: 'b', toolCallId: 'b' });
    expect(ledger.records()).toMatchObject([
      { sdkCallId: 'a', toolCallId: undefined, state: 'started' },
      { sdkCallId: 'b', toolCallId: 'b', state: 'parked' },
    ]);
  });

  it('then by tool and arguments when the ids differ', () => {
    const ledger = new ToolCallLedger();
    ledger.started('started-1', 'Read', { path: '/x' });
    ledger.started('started-2', 'Read', { path: '/y' });
    expect(park(ledger, 'exec-9', 'Read', { path: '/y' })).toMatchObject({
      sdkCallId: 'started-2',
      toolCallId: 'exec-9',
      state: 'parked',
    });
    expect(ledger.records()[0]).toMatchObject({ sdkCallId: 'started-1', state: 'started' });
  });

  it('then by tool in start order when the arguments differ too', () => {
    const ledger = new ToolCallLedger();
    ledger.started('s1', 'Bash', { command: 'a' });
    ledger.started('s2', 'Bash', { command: 'b' });
    ledger.started('s3', 'Read', { path: '/x' });
    expect(park(ledger, 'e1', 'Bash', { command: 'coerced' })).toMatchObject({ sdkCallId: 's1' });
    expect(park(ledger, 'e2', 'Bash', { command: 'coerced' })).toMatchObject({ sdkCallId: 's2' });
    // The executed arguments replace the started ones.
    expect(ledger.records()[1]).toMatchObject({ toolCallId: 'e2', args: { command: 'coerced' } });
  });

  it('an SDK retry re-executes with the same id: parked once, and a replayed started update is not new', () => {
    const ledger = new ToolCallLedger();
    expect(ledger.started('a', 'Bash', {})).toBe(true);
    expect(park(ledger, 'a', 'Bash')).toBeDefined();
    expect(park(ledger, 'a', 'Bash')).toBeUndefined();
    expect(ledger.started('a', 'Bash', {})).toBe(false);
    expect(ledger.resolve('a')).toBe('resolved');
    expect(park(ledger, 'a', 'Bash')).toBeUndefined();
    // A call that parked without a started update is known by its toolCallId too.
    expect(park(ledger, 'x', 'Bash')).toBeDefined();
    expect(ledger.started('x', 'Bash', {})).toBe(false);
    expect(ledger.records()).toHaveLength(2);
  });

  it('a started call that never executes keeps its batch open and is not a pending or known call', () => {
    const ledger = new ToolCallLedger();
    ledger.started('a', 'Bash', {});
    ledger.started('b', 'Read', {});
    park(ledger, 'a', 'Bash');
    expect(ledger.batchStatus).toBe('open');
    expect(ledger.pending()).toEqual(['a']);
    expect(ledger.resolve('b')).toBe('unknown');
  });

  it('an execute without toolCallId claims the matching started id and parks under it', () => {
    const ledger = new ToolCallLedger();
    ledger.started('s1', 'Bash', { command: 'ls' });
    ledger.started('s2', 'Bash', { command: 'pwd' });
    expect(ledger.claim('Bash', { command: 'pwd' })).toBe('s2');
    // Claimed: not offered again to the next execute without an id.
    expect(ledger.claim('Bash', { command: 'pwd' })).toBe('s1');
    expect(ledger.claim('Bash', {})).toBeUndefined();
    expect(ledger.claim('Read', {})).toBeUndefined();
    expect(park(ledger, 's2', 'Bash', { command: 'pwd' })).toMatchObject({
      sdkCallId: 's2',
      toolCallId: 's2',
    });
    expect(park(ledger, 's1', 'Bash', { command: 'pwd' })).toMatchObject({
      sdkCallId: 's1',
      toolCallId: 's1',
    });
    // Nothing left to claim: the tool host makes up an id, and the call is a record of its own.
    expect(park(ledger, 'generated-1', 'Bash')).toMatchObject({
      sdkCallId: undefined,
      toolCallId: 'generated-1',
    });
    expect(ledger.pending()).toEqual(['s2', 's1', 'generated-1']);
  });
});

describe('ToolCallLedger results', () => {
  it('forwards a result once, ignores a settled call and reports an id it never parked', () => {
    const ledger = new ToolCallLedger();
    park(ledger, 'a', 'Bash');
    park(ledger, 'b', 'Bash');
    expect(ledger.resolve('a')).toBe('resolved');
    expect(ledger.resolve('a')).toBe('settled');
    expect(ledger.resolve('zzz')).toBe('unknown');
    ledger.abandonAll();
    expect(ledger.pending()).toEqual([]);
    expect(ledger.resolve('b')).toBe('settled');
  });

  it('lists pending calls in park order, not start order', () => {
    const ledger = new ToolCallLedger();
    ledger.started('a', 'Bash', {});
    ledger.started('b', 'Bash', {});
    park(ledger, 'b', 'Bash');
    park(ledger, 'a', 'Bash');
    expect(ledger.pending()).toEqual(['b', 'a']);
  });
});

describe('ToolCallLedger batches', () => {
  it('completes only when every listed and started call is parked', () => {
    const ledger = new ToolCallLedger();
    ledger.listed(2);
    ledger.started('a', 'Bash', {});
    park(ledger, 'a', 'Bash');
    expect(ledger.batchStatus).toBe('open');
    ledger.started('b', 'Bash', {});
    expect(ledger.batchStatus).toBe('open');
    park(ledger, 'b', 'Bash');
    expect(ledger.batchStatus).toBe('complete');
  });

  it('without a listing signal, reports an unlisted completion the caller confirms after a short wait', () => {
    const ledger = new ToolCallLedger();
    ledger.started('a', 'Bash', {});
    expect(ledger.batchStatus).toBe('open');
    park(ledger, 'a', 'Bash');
    expect(ledger.batchStatus).toBe('unlisted');
    ledger.endBatch();
    expect(ledger.batchStatus).toBe('open');
    // The next step's calls form a batch of their own; the first step's are still known.
    ledger.listed(1);
    park(ledger, 'c', 'Bash');
    expect(ledger.batchStatus).toBe('complete');
    expect(ledger.started('a', 'Bash', {})).toBe(false);
  });
});

describe('ToolCallLedger corrections', () => {
  it('a corrected call is never pending, keeps its place in its batch and repeats its correction to a retry', () => {
    const ledger = new ToolCallLedger();
    ledger.listed(2);
    ledger.started('a', 'Read', { path: '/scratch/x' });
    ledger.started('b', 'Bash', {});
    expect(ledger.correct({ toolCallId: 'a', toolName: 'Read', args: { path: '/scratch/x' } }, 'first')).toBe(
      'first',
    );
    expect(ledger.batchStatus).toBe('open');
    park(ledger, 'b', 'Bash');
    expect(ledger.batchStatus).toBe('complete');
    expect(ledger.pending()).toEqual(['b']);
    expect(ledger.correctionFor('a')).toBe('first');
    expect(ledger.correctionFor('b')).toBeUndefined();
    // An SDK retry executes it again: the same answer, and it does not park.
    expect(ledger.correct({ toolCallId: 'a', toolName: 'Read', args: {} }, 'second')).toBe('first');
    expect(park(ledger, 'a', 'Read')).toBeUndefined();
    // Its id is known, and settled: a result for it is ignored, not reported.
    expect(ledger.resolve('a')).toBe('settled');
    expect(ledger.takeAnnounceable()).toEqual([
      expect.objectContaining({ toolCallId: 'b', toolName: 'Bash' }),
    ]);
  });
});

describe('ToolCallLedger announcing', () => {
  it("hands out parked calls once, in the model's order, holding one that parked before an earlier call", () => {
    const ledger = new ToolCallLedger();
    ledger.started('a', 'Bash', { command: 'a' });
    ledger.started('b', 'Bash', { command: 'b' });
    ledger.park({ toolCallId: 'b', toolName: 'Bash', args: { command: 'b' }, parkedAt: 20 });
    expect(ledger.takeAnnounceable()).toEqual([]);
    expect(ledger.holding).toBe(true);
    ledger.park({ toolCallId: 'a', toolName: 'Bash', args: { command: 'a' }, parkedAt: 30 });
    expect(ledger.takeAnnounceable()).toEqual([
      { toolCallId: 'a', toolName: 'Bash', args: { command: 'a' }, parkedAt: 30 },
      { toolCallId: 'b', toolName: 'Bash', args: { command: 'b' }, parkedAt: 20 },
    ]);
    expect(ledger.holding).toBe(false);
    expect(ledger.takeAnnounceable()).toEqual([]);
  });

  it('all: hands out every parked call without waiting for an earlier one of the batch', () => {
    const ledger = new ToolCallLedger();
    ledger.started('a', 'Bash', {});
    ledger.started('b', 'Bash', {});
    park(ledger, 'b', 'Bash');
    expect(ledger.takeAnnounceable(true).map((call) => call.toolCallId)).toEqual(['b']);
    expect(ledger.holding).toBe(false);
  });

  it('a call left unparked by an ended batch holds nothing back in the next one', () => {
    const ledger = new ToolCallLedger();
    ledger.started('a', 'Bash', {});
    ledger.endBatch();
    ledger.started('b', 'Bash', {});
    park(ledger, 'b', 'Bash');
    expect(ledger.takeAnnounceable().map((call) => call.toolCallId)).toEqual(['b']);
  });
});
