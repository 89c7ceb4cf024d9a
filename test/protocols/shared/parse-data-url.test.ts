import { describe, expect, it } from 'vitest';
import { parseDataUrl } from '../../../src/protocols/shared/parse-data-url.js';

describe('parseDataUrl', () => {
  it('splits a base64 data URL, parameters and all', () => {
    expect(parseDataUrl('data:image/png;base64,iVBORw0KGgo=')).toEqual({
      mediaType: 'image/png',
      base64: true,
      data: 'iVBORw0KGgo=',
    });
    expect(parseDataUrl('data:image/svg+xml;charset=utf-8;base64,PHN2Zz4=')).toEqual({
      mediaType: 'image/svg+xml',
      base64: true,
      data: 'PHN2Zz4=',
    });
  });

  it('reports percent-encoded data and an empty media type as they are', () => {
    expect(parseDataUrl('data:text/plain,hello%20world')).toEqual({
      mediaType: 'text/plain',
      base64: false,
      data: 'hello%20world',
    });
    expect(parseDataUrl('data:;base64,QUJD')).toEqual({ mediaType: '', base64: true, data: 'QUJD' });
  });

  it('keeps commas and newlines of the payload', () => {
    expect(parseDataUrl('data:text/csv,a,b\nc,d')?.data).toBe('a,b\nc,d');
  });

  it.each(['https://example.com/a.png', 'file:///etc/passwd', 'data:image/png;base64', 'DATA:x,y'])(
    'is undefined for %j',
    (url) => {
      expect(parseDataUrl(url)).toBeUndefined();
    },
  );
});
