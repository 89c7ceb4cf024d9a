import { describe, expect, it } from 'vitest';
import { findSessionHeader, sessionHeaderNames } from '../../../src/protocols/shared/find-session-header.js';

describe('findSessionHeader', () => {
  it('lists the spec headers in order', () => {
    expect(sessionHeaderNames).toEqual([
      'x-opencode-session',
      'x-kilocode-taskid',
      'x-kilo-session',
      'x-grok-session-id',
      'x-grok-conv-id',
      'x-conversation-id',
      'session-id',
      'x-session-id',
      'x-session-affinity',
    ]);
  });

  it('takes the first header in spec order, not in request order', () => {
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
