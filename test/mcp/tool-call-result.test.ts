import { describe, expect, it } from 'vitest';
import { createErrorResult, createTextResult, toToolCallResult } from '../../mcp/tool-call-result.js';

describe('tool results', () => {
  it('builds text and error results', () => {
    expect(createTextResult('ok')).toEqual({ content: [{ type: 'text', text: 'ok' }] });
    expect(createErrorResult('bad')).toEqual({ content: [{ type: 'text', text: 'bad' }], isError: true });
  });

  it('passes text, image, isError and structuredContent through', () => {
    const result = toToolCallResult({
      content: [
        { type: 'text', text: 'hi', annotations: { priority: 1 } },
        { type: 'image', data: 'iVBORw0KGgo=', mimeType: 'image/png' },
      ],
      isError: true,
      structuredContent: { n: 1 },
      _meta: { x: 1 },
    });
    expect(result).toEqual({
      content: [
        { type: 'text', text: 'hi' },
        { type: 'image', data: 'iVBORw0KGgo=', mimeType: 'image/png' },
      ],
      isError: true,
      structuredContent: { n: 1 },
    });
  });

  it('turns other content blocks and legacy toolResult into text', () => {
    const resource = { type: 'resource_link', uri: 'file:///a', name: 'a' };
    expect(toToolCallResult({ content: [resource] })).toEqual({
      content: [{ type: 'text', text: JSON.stringify(resource) }],
    });
    expect(toToolCallResult({ toolResult: { a: 1 } })).toEqual({
      content: [{ type: 'text', text: '{"a":1}' }],
    });
    expect(toToolCallResult({ content: [], isError: false, structuredContent: [1] })).toEqual({
      content: [],
    });
  });
});
