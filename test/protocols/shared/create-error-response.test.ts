import { describe, expect, it } from 'vitest';
import { createErrorResponse } from '../../../src/protocols/shared/create-error-response.js';
import { createTurnError } from '../../../src/turn/turn-error.js';

describe('createErrorResponse', () => {
  it('tells clients not to retry a non-retryable error', () => {
    expect(createErrorResponse(createTurnError('authentication', 'bad key'), 401, { e: 1 })).toEqual({
      status: 401,
      headers: { 'x-should-retry': 'false' },
      body: { e: 1 },
    });
  });

  it('leaves retryable errors to the client retry policy', () => {
    expect(createErrorResponse(createTurnError('overloaded', 'busy'), 529, null)).toEqual({
      status: 529,
      headers: {},
      body: null,
    });
  });
});
