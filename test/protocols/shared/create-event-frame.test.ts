import { describe, expect, it } from 'vitest';
import { createDataFrame, createEventFrame } from '../../../src/protocols/shared/create-event-frame.js';
import { serializeSseFrames } from '../../../src/protocols/sse-serialize.js';

describe('createEventFrame', () => {
  it('names the event after the payload type and keeps the key order', () => {
    const frame = createEventFrame({ type: 'content_block_stop', index: 2 });
    expect(frame).toEqual({ event: 'content_block_stop', data: '{"type":"content_block_stop","index":2}' });
    expect(serializeSseFrames([frame])).toBe(
      'event: content_block_stop\ndata: {"type":"content_block_stop","index":2}\n\n',
    );
  });

  it('escapes newlines so the data stays on one line', () => {
    expect(createEventFrame({ type: 'delta', text: 'a\nb' })).toEqual({
      event: 'delta',
      data: '{"type":"delta","text":"a\\nb"}',
    });
  });
});

describe('createDataFrame', () => {
  it('is an unnamed data frame', () => {
    expect(createDataFrame({ choices: [] })).toEqual({ data: '{"choices":[]}' });
  });
});
