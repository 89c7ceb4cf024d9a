/**
 * Every image the fake backend receives — in a run request's user message (`selectedContext.selectedImages`,
 * the bytes inline) or in an MCP tool result — recorded with a hash of its bytes and, decoded with sharp,
 * its size and a hash of its pixels, so a test can assert that the pixels it sent arrived and in which form.
 *
 * Where @cursor/sdk 1.0.32 puts them (local agents): `agent.send({text, images: [{data, mimeType}]})` becomes
 * `AgentRunRequest.action.userMessageAction.userMessage.selectedContext.selectedImages[]`, each
 * `agent.v1.SelectedImage{uuid, data (inline bytes, the oneof `dataOrBlobId` case `data`), mimeType}`. The SDK
 * drops the `mimeType` (and `dimension`) it was given and sets `mimeType` from the bytes' magic: `image/png`
 * or `image/jpeg`, nothing for any other format (a GIF or WebP arrives without one). A custom tool's
 * `{type: 'image', data, mimeType}` result becomes `McpImageContent{data (bytes), mimeType}` with the
 * tool's `mimeType` as given (empty when it gave none).
 */

import { createHash } from 'node:crypto';

import sharp from 'sharp';

export type FakeReceivedImage = {
  /** Where it came: the user message of a run request, or a host tool's result. */
  source: 'user-message' | 'tool-result';
  /** The run request it came with (a user message), or during (a tool result). */
  runRequestIndex: number;
  /** The tool call whose result carried it (`McpArgs.toolCallId`). */
  toolCallId?: string;
  /** The media type as the wire carried it (undefined when it carried none: see the file's head). */
  mimeType?: string;
  /** The type the bytes say they are. */
  sniffedType: 'image/png' | 'image/jpeg' | 'image/gif' | 'image/webp' | 'unknown';
  /** Bytes received. */
  size: number;
  /** sha256 (hex) of the bytes as received. */
  sha256: string;
  /**
   * Decoded with sharp (the first frame): its width and height and the sha256 (hex) of its raw RGBA pixels,
   * equal for the same pixels in any lossless format. Undefined when sharp cannot decode the bytes. The
   * backend fills them before the scenario sees the run request (user-message images) or before it sends
   * the tool call's completion (tool-result images), so they are set once the client has its answer.
   */
  width?: number;
  height?: number;
  pixelSha256?: string;
  /** The bytes received. */
  data: Buffer;
};

const startsWith = (bytes: Buffer, head: readonly number[], at = 0): boolean =>
  head.every((byte, index) => bytes[at + index] === byte);

export const sniffImageType = (bytes: Buffer): FakeReceivedImage['sniffedType'] => {
  if (startsWith(bytes, [0x89, 0x50, 0x4e, 0x47])) return 'image/png';
  if (startsWith(bytes, [0xff, 0xd8, 0xff])) return 'image/jpeg';
  if (startsWith(bytes, [0x47, 0x49, 0x46, 0x38])) return 'image/gif';
  if (startsWith(bytes, [0x52, 0x49, 0x46, 0x46]) && startsWith(bytes, [0x57, 0x45, 0x42, 0x50], 8))
    return 'image/webp';
  return 'unknown';
};

export const sha256Hex = (bytes: Buffer): string => createHash('sha256').update(bytes).digest('hex');

export const receivedImage = (
  data: Buffer,
  where: Pick<FakeReceivedImage, 'source' | 'runRequestIndex' | 'toolCallId' | 'mimeType'>,
): FakeReceivedImage => ({
  source: where.source,
  runRequestIndex: where.runRequestIndex,
  ...(where.toolCallId === undefined ? {} : { toolCallId: where.toolCallId }),
  ...(where.mimeType === undefined || where.mimeType === '' ? {} : { mimeType: where.mimeType }),
  sniffedType: sniffImageType(data),
  size: data.length,
  sha256: sha256Hex(data),
  data,
});

export type ImageDescription = {
  sha256: string;
  sniffedType: FakeReceivedImage['sniffedType'];
  width: number;
  height: number;
  /** sha256 (hex) of the decoded RGBA pixels (the first frame): equal for the same pixels in any lossless format. */
  pixelSha256: string;
};

/** What an image's bytes are: their hash, and its first frame's size and pixels. */
export const describeImage = async (bytes: Buffer): Promise<ImageDescription> => {
  const { data, info } = await sharp(bytes).ensureAlpha().raw().toBuffer({ resolveWithObject: true });
  return {
    sha256: sha256Hex(bytes),
    sniffedType: sniffImageType(bytes),
    width: info.width,
    height: info.height,
    pixelSha256: sha256Hex(data),
  };
};

/**
 * Fills a record's {@link FakeReceivedImage.width}, `height` and `pixelSha256` (leaves them unset when sharp
 * cannot decode its bytes); never rejects.
 */
export const decodeReceivedImage = async (image: FakeReceivedImage): Promise<void> => {
  try {
    const { width, height, pixelSha256 } = await describeImage(image.data);
    Object.assign(image, { width, height, pixelSha256 });
  } catch {
    // Not an image sharp reads: the record keeps its byte hash only.
  }
};

/** {@link decodeReceivedImage} for each record, at once. */
export const decodeReceivedImages = async (images: readonly FakeReceivedImage[]): Promise<void> => {
  await Promise.all(images.map(decodeReceivedImage));
};
