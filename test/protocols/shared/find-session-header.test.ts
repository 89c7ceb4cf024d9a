import { describe, expect, it } from 'vitest';
import { findSessionHeader, sessionHeaderNames } from '../../../src/protocols/shared/find-session-header.js';

describe('findSessionHeader', () => {
  it.each(sessionHeaderNames.map((name, index) => [name, index]))(
    'finds %s, the header at rank %i',
    (name) => {
      expect(findSessionHeader({ 'user-agent': 'x', [name]: 'sess-1' })).toEqual({
        value: 'sess-1',
        source: name,
      });
    },
  );

  it('takes the first header in precedence order, not in request order', () => {
    expect(
      findSessionHeader({ 'x-session-affinity': 'a', 'x-session-id': 's', 'session-id': 'sid' }),
    ).toEqual({ value: 'sid', source: 'session-id' });
  });

  it('skips blank values and finds nothing without a session header', () => {
    expect(findSessionHeader({ 'x-opencode-session': ' ', 'x-session-id': 'ses_1' })).toEqual({
      value: 'ses_1',
      source: 'x-session-id',
    });
    expect(findSessionHeader({ 'x-session-id': '', 'user-agent': 'x' })).toBeUndefined();
  });
});
