import { describe, expect, it } from 'vitest';
import { convertToolCallInput } from '../../../src/protocols/shared/convert-tool-call-input.js';

describe('convertToolCallInput', () => {
  it('parses JSON arguments', () => {
    expect(convertToolCallInput('{"command":"ls"}')).toEqual({ command: 'ls' });
    expect(convertToolCallInput('[1]')).toEqual([1]);
  });

  it('keeps text that is not JSON as it is, including an empty string', () => {
    expect(convertToolCallInput('{"path":')).toBe('{"path":');
    expect(convertToolCallInput('*** Begin Patch')).toBe('*** Begin Patch');
    expect(convertToolCallInput('')).toBe('');
  });
});
