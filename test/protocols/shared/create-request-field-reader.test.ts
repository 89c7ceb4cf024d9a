import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { createRequestFieldReader } from '../../../src/protocols/shared/create-request-field-reader.js';
import { InvalidRequestFault } from '../../../src/protocols/shared/invalid-request-fault.js';

const textPart = z.looseObject({ type: z.literal('text'), text: z.string() });

/** Runs `read` and returns the InvalidRequestFault it threw. */
const faultOf = (read: () => unknown): InvalidRequestFault => {
  try {
    read();
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidRequestFault);
    return error as InvalidRequestFault;
  }
  throw new Error('expected an InvalidRequestFault');
};

describe('createRequestFieldReader', () => {
  const parseAt = createRequestFieldReader('as-reported');

  it('returns the parsed value, unknown keys kept', () => {
    expect(parseAt(textPart, { type: 'text', text: 'hi', extra: 1 }, 'messages.0')).toEqual({
      type: 'text',
      text: 'hi',
      extra: 1,
    });
  });

  it('throws a fault naming the field below a dot path or a segment path', () => {
    expect(faultOf(() => parseAt(textPart, { type: 'text' }, 'messages.1.content.0'))).toMatchObject({
      param: 'messages.1.content.0.text',
      message:
        'Invalid request: messages.1.content.0.text: Invalid input: expected string, received undefined',
    });
    expect(faultOf(() => parseAt(textPart, { type: 'image' }, ['input', 3, 'content', 0])).param).toBe(
      'input.3.content.0.type',
    );
  });

  it('reports a failure of the body itself without a param', () => {
    const fault = faultOf(() => parseAt(z.looseObject({ model: z.string() }), [1], ''));
    expect(fault.param).toBeUndefined();
    expect(fault.message).toMatch(/^Invalid request body: /);
  });

  it('explains unions in the style it was created with', () => {
    const schema = z.looseObject({ image_url: z.union([z.string(), z.looseObject({ url: z.string() })]) });
    expect(faultOf(() => parseAt(schema, { image_url: {} }, 'p')).param).toBe('p.image_url');
    const deepest = createRequestFieldReader('deepest-alternative');
    expect(faultOf(() => deepest(schema, { image_url: {} }, 'p')).param).toBe('p.image_url.url');
  });
});
