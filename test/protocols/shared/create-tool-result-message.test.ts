import { describe, expect, it } from 'vitest';
import { createToolResultMessage } from '../../../src/protocols/shared/create-tool-result-message.js';

describe('createToolResultMessage', () => {
  const content = [{ type: 'text' as const, text: 'ok' }];

  it('leaves toolName out when it is not known and defaults isError to false', () => {
    const message = createToolResultMessage('call_1', content, { toolName: undefined });
    expect(message).toEqual({ role: 'tool', toolCallId: 'call_1', content, isError: false });
    expect(message).not.toHaveProperty('toolName');
  });

  it('carries a known toolName and an error flag', () => {
    expect(createToolResultMessage('call_2', [], { toolName: 'bash', isError: true })).toEqual({
      role: 'tool',
      toolCallId: 'call_2',
      toolName: 'bash',
      content: [],
      isError: true,
    });
  });
});
