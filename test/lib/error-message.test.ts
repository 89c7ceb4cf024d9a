import { describe, expect, it } from 'vitest';
import { errorMessage } from '../../lib/error-message.js';

describe('errorMessage', () => {
  it("is an Error's message (a subclass's too), without its name or stack", () => {
    expect(errorMessage(new Error('disk full'))).toBe('disk full');
    expect(errorMessage(new TypeError('not a function'))).toBe('not a function');
  });

  it('renders anything else thrown as String does', () => {
    expect(errorMessage('plain text')).toBe('plain text');
    expect(errorMessage(42)).toBe('42');
    expect(errorMessage(undefined)).toBe('undefined');
    expect(errorMessage({ code: 'EPIPE' })).toBe('[object Object]');
    expect(errorMessage({ toString: () => 'custom' })).toBe('custom');
  });
});
