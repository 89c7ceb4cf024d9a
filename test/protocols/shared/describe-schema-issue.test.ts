import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { describeSchemaIssue } from '../../../src/protocols/shared/describe-schema-issue.js';

const errorOf = (schema: z.ZodType, value: unknown): z.ZodError => {
  const result = schema.safeParse(value);
  if (result.success) throw new Error('expected a failure');
  return result.error;
};

const content = z.union([z.string(), z.array(z.looseObject({ type: z.string() }))]);
const body = z.looseObject({ messages: z.array(z.looseObject({ content })) });

describe('describeSchemaIssue', () => {
  it('joins the base path and the issue path with dots', () => {
    const error = errorOf(z.looseObject({ text: z.string() }), { text: 7 });
    expect(describeSchemaIssue(error, ['messages', 2, 'content', 0])).toEqual({
      path: 'messages.2.content.0.text',
      message: 'Invalid input: expected string, received number',
    });
    expect(describeSchemaIssue(errorOf(z.string(), 1)).path).toBe('');
  });

  it('as-reported: the union at its own path with zod (or the custom) message', () => {
    expect(describeSchemaIssue(errorOf(body, { messages: [{ content: 5 }] }))).toEqual({
      path: 'messages.0.content',
      message: 'Invalid input',
    });
    const custom = z.union([z.string(), z.array(z.unknown())], { error: 'expected text or blocks' });
    expect(describeSchemaIssue(errorOf(custom, 5), ['system'])).toEqual({
      path: 'system',
      message: 'expected text or blocks',
    });
  });

  it('deepest-alternative: the alternative that got furthest, or the expected kinds', () => {
    expect(
      describeSchemaIssue(errorOf(body, { messages: [{ content: [{}] }] }), [], 'deepest-alternative'),
    ).toEqual({
      path: 'messages.0.content.0.type',
      message: 'Invalid input: expected string, received undefined',
    });
    expect(
      describeSchemaIssue(errorOf(body, { messages: [{ content: 5 }] }), [], 'deepest-alternative'),
    ).toEqual({ path: 'messages.0.content', message: 'Invalid input: expected string or array' });
  });

  it('list-alternatives: the union path with every alternative message', () => {
    expect(
      describeSchemaIssue(errorOf(body, { messages: [{ content: [{}] }] }), ['input'], 'list-alternatives'),
    ).toEqual({
      path: 'input.messages.0.content',
      message:
        'Invalid input: expected string, received array; or Invalid input: expected string, received undefined',
    });
  });
});
