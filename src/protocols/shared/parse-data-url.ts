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
