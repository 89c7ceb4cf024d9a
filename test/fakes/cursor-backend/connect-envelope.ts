/**
 * Connect protocol envelopes (streaming RPCs): 1 flag byte, 4-byte big-endian length, payload.
 * Flag 0 = message, flag 2 = end of stream (payload = JSON trailer, `{}` or `{"error":{…}}`).
 * @see https://connectrpc.com/docs/protocol#streaming-request
 */

const END_STREAM_FLAG = 0x02;

/**
 * Connect error codes for end-of-stream trailers. With `enableAgentRetries` on (the SDK default), only
 * `unauthenticated` and `permission_denied` end the run at once; every other code is retried (≈16 s).
 */
export type ConnectErrorCode =
  | 'canceled'
  | 'unknown'
  | 'invalid_argument'
  | 'deadline_exceeded'
  | 'not_found'
  | 'already_exists'
  | 'permission_denied'
  | 'resource_exhausted'
  | 'failed_precondition'
  | 'aborted'
  | 'out_of_range'
  | 'unimplemented'
  | 'internal'
  | 'unavailable'
  | 'data_loss'
  | 'unauthenticated';

const envelope = (flags: number, payload: Uint8Array): Buffer => {
  const header = Buffer.alloc(5);
  header.writeUInt8(flags, 0);
  header.writeUInt32BE(payload.length, 1);
  return Buffer.concat([header, payload]);
};

/** Frames one message. */
export const encodeMessageEnvelope = (payload: Uint8Array): Buffer => envelope(0, payload);

/**
 * A Connect error detail: `type` is the full protobuf type name, `value` its binary encoding in base64
 * without padding (the SDK reads `aiserver.v1.ErrorDetails` back with `ConnectError.findDetails`).
 */
export type ConnectErrorDetail = { type: string; value: string };

/** The error of an end-of-stream trailer. */
export type ConnectEndStreamError = {
  code: ConnectErrorCode;
  message: string;
  details?: ConnectErrorDetail[];
};

/**
 * The end-of-stream envelope; with `error` the SDK sees a ConnectError of that code (and details), with
 * `metadata` the error's trailers (`ConnectError.metadata`).
 */
export const encodeEndStreamEnvelope = (
  error?: ConnectEndStreamError,
  metadata?: Readonly<Record<string, readonly string[]>>,
): Buffer =>
  envelope(
    END_STREAM_FLAG,
    Buffer.from(JSON.stringify({ ...(error ? { error } : {}), ...(metadata ? { metadata } : {}) })),
  );

/** Payloads of the message envelopes in a complete request body (end-of-stream envelopes skipped). */
export const decodeEnvelopes = (body: Buffer): Uint8Array[] => {
  const payloads: Uint8Array[] = [];
  let offset = 0;
  while (offset + 5 <= body.length) {
    const flags = body.readUInt8(offset);
    const length = body.readUInt32BE(offset + 1);
    const payload = body.subarray(offset + 5, offset + 5 + length);
    if (payload.length < length) throw new Error('Truncated Connect envelope');
    if ((flags & END_STREAM_FLAG) === 0) payloads.push(payload);
    offset += 5 + length;
  }
  return payloads;
};
