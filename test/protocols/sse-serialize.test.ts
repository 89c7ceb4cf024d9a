import { describe, expect, it } from 'vitest';
import { serializeSseFrame } from '../../src/protocols/sse-serialize.js';

describe('serializeSseFrame', () => {
  it('writes single-line data as one data line, after the event name', () => {
    expect(serializeSseFrame({ event: 'ping', data: '{"type":"ping"}' })).toBe(
      'event: ping\ndata: {"type":"ping"}\n\n',
    );
    expect(serializeSseFrame({ data: '' })).toBe('data: \n\n');
  });

  it('splits data on LF, CRLF and CR into one data line each', () => {
    expect(serializeSseFrame({ data: 'a\nb\r\nc\rd' })).toBe('data: a\ndata: b\ndata: c\ndata: d\n\n');
    expect(serializeSseFrame({ event: 'e', data: 'a\n' })).toBe('event: e\ndata: a\ndata: \n\n');
  });

  it('refuses an event name with a line break', () => {
    expect(() => serializeSseFrame({ event: 'a\rb', data: 'x' })).toThrow(/CR or LF/);
  });
});
