import { describe, expect, it } from 'vitest';
import { sanitizeHeaders } from '../../../src/protocols/shared/sanitize-headers.js';

describe('sanitizeHeaders', () => {
  it('lower-cases names, keeps values and drops every credential header', () => {
    expect(
      sanitizeHeaders({
        Authorization: 'Bearer sk',
        'X-API-KEY': 'sk-test',
        Cookie: 'a=b',
        'Proxy-Authorization': 'Basic x',
        'User-Agent': 'Claude-CLI/2.1',
        'x-session-id': 'Ses_1',
      }),
    ).toEqual({ 'user-agent': 'Claude-CLI/2.1', 'x-session-id': 'Ses_1' });
  });

  it('returns a new object and leaves the input alone', () => {
    const headers = { Accept: 'text/event-stream' };
    expect(sanitizeHeaders(headers)).not.toBe(headers);
    expect(headers).toEqual({ Accept: 'text/event-stream' });
  });
});
