import { describe, expect, it } from 'vitest';
import { createOpenaiErrorBody } from '../../../src/protocols/shared/create-openai-error-body.js';
import { createTurnError } from '../../../src/turn/turn-error.js';

describe('createOpenaiErrorBody', () => {
  it('carries the param of an invalid request', () => {
    const error = createTurnError('invalid-request', 'bad', { param: 'messages.0.content' });
    expect(createOpenaiErrorBody(error, { type: 'invalid_request_error', code: null })).toEqual({
      error: { message: 'bad', type: 'invalid_request_error', param: 'messages.0.content', code: null },
    });
  });

  it('sends param null when no field is at fault', () => {
    expect(createOpenaiErrorBody(createTurnError('rate-limit', 'slow'), { type: 't', code: 'c' })).toEqual({
      error: { message: 'slow', type: 't', param: null, code: 'c' },
    });
  });
});
