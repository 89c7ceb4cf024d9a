import { describe, expect, it } from 'vitest';
import { convertToolCallInput } from '../../../src/protocols/shared/convert-tool-call-input.js';
import { InvalidRequestFault } from '../../../src/protocols/shared/invalid-request-fault.js';

describe('convertToolCallInput', () => {
  it('parses JSON arguments', () => {
    expect(convertToolCallInput('{"command":"ls"}', 'args')).toEqual({ command: 'ls' });
    expect(convertToolCallInput('[1]', 'args')).toEqual([1]);
  });

  it('keeps text that is not JSON as it is, including an empty string', () => {
    expect(convertToolCallInput('{"path":', 'args')).toBe('{"path":');
    expect(convertToolCallInput('*** Begin Patch', 'args')).toBe('*** Begin Patch');
    expect(convertToolCallInput('', 'args')).toBe('');
  });

  it('refuses arguments nested deeper than the JSON limit, naming the field and the path inside it', () => {
    const deep = `{"a":${'['.repeat(5000)}${']'.repeat(5000)}}`;
    let fault: unknown;
    try {
      convertToolCallInput(deep, 'messages.1.tool_calls.0.function.arguments');
    } catch (error) {
      fault = error;
    }
    expect(fault).toBeInstanceOf(InvalidRequestFault);
    expect((fault as InvalidRequestFault).param).toBe('messages.1.tool_calls.0.function.arguments');
    expect((fault as InvalidRequestFault).message).toMatch(
      /^Invalid request: messages\.1\.tool_calls\.0\.function\.arguments: JSON nested deeper than 64 levels.*\(at a\.0\.0\./,
    );
  });
});
