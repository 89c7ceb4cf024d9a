/** The parts of an RFC 2397 `data:` URL. */
export type DataUrl = {
  /** As written, possibly `''` (the RFC's default is `text/plain;charset=US-ASCII`). */
  mediaType: string;
  /** True when one of the `;` parameters is `base64`. */
  base64: boolean;
  /** Everything after the first comma, not decoded. */
  data: string;
};

const dataUrlPattern = /^data:([^;,]*)((?:;[^;,]*)*),(.*)$/s;

/** Splits a `data:` URL into media type, encoding and payload; `undefined` for any other URL. */
export const parseDataUrl = (url: string): DataUrl | undefined => {
  const match = dataUrlPattern.exec(url);
  if (match === null) return undefined;
  return {
    mediaType: match[1] ?? '',
    base64: (match[2] ?? '').split(';').includes('base64'),
    data: match[3] ?? '',
  };
};

/** The bytes of a percent-encoded (RFC 3986) payload: `%XX` is one byte, any other character its UTF-8. */
const percentDecode = (text: string): Buffer => {
  const bytes: number[] = [];
  for (let index = 0; index < text.length; index += 1) {
    const hex = text[index] === '%' ? text.slice(index + 1, index + 3) : '';
    if (/^[0-9a-f]{2}$/i.test(hex)) {
      bytes.push(Number.parseInt(hex, 16));
      index += 2;
    } else bytes.push(...Buffer.from(text[index] ?? '', 'utf8'));
  }
  return Buffer.from(bytes);
};

/**
 * The payload as base64: a base64 payload as it is, any other (`data:image/png,%89PNG…`) percent-decoded
 * into its bytes first, so the image reaches the model either way.
 */
export const dataUrlBase64 = (dataUrl: DataUrl): string =>
  dataUrl.base64 ? dataUrl.data : percentDecode(dataUrl.data).toString('base64');
