import { describe, expect, it } from 'vitest';
import {
  catchInvalidRequest,
  InvalidRequestFault,
} from '../../../src/protocols/shared/invalid-request-fault.js';
import { createTestTurnRequest } from '../../helpers/protocols/create-test-turn-request.js';

const turn = createTestTurnRequest();

describe('InvalidRequestFault.atField', () => {
  it('names the field in the message and the param', () => {
    const fault = InvalidRequestFault.atField('messages.0.role', 'Invalid option');
    expect(fault).toMatchObject({
      param: 'messages.0.role',
      message: 'Invalid request: messages.0.role: Invalid option',
    });
  });

  it('speaks of the body, without a param, for the root', () => {
    const fault = InvalidRequestFault.atField('', 'expected object');
    expect(fault.param).toBeUndefined();
    expect(fault.message).toBe('Invalid request body: expected object');
  });
});

describe('catchInvalidRequest', () => {
  it('returns the converted request', () => {
    expect(catchInvalidRequest(() => turn)).toEqual({ ok: true, value: turn });
  });

  it('turns a fault into a non-retryable invalid-request error, with param only when known', () => {
    expect(
      catchInvalidRequest(() => {
        throw new InvalidRequestFault('conversation', 'conversation: not stored');
      }),
    ).toEqual({
      ok: false,
      error: {
        kind: 'invalid-request',
        message: 'conversation: not stored',
        param: 'conversation',
        retryable: false,
      },
    });
    const result = catchInvalidRequest(() => {
      throw new InvalidRequestFault(undefined, 'Invalid request: the body must be a JSON object');
    });
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.error).not.toHaveProperty('param');
  });

  it('lets any other exception through', () => {
    expect(() =>
      catchInvalidRequest(() => {
        throw new TypeError('bug');
      }),
    ).toThrow(TypeError);
  });
});
