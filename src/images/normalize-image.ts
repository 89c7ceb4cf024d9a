/**
 * Every image the bridge hands to Cursor leaves here as PNG or JPEG within the size every model Cursor
 * serves accepts. The SDK's `send` keeps only an image's bytes and recognises JPEG and PNG by their first
 * bytes, so any other format would reach the model untyped: GIF (its first frame), WebP, AVIF, HEIF and TIFF
 * are re-encoded. An image already PNG or JPEG and within the limits passes through byte for byte.
 *
 * Decoding and encoding use sharp (libvips): prebuilt binaries from npm for every platform Node runs on,
 * streaming decode with a pixel bound, and one call for the first frame of an animation. A pure-JavaScript
 * codec set (jimp) would decode a 12-megapixel photo several times slower on the request's path and has
 * no AVIF or HEIF.
 */

import sharp, { type Metadata } from 'sharp';

import type { Result } from '../../lib/result.js';

export type ImageLimits = {
  /** Longest side, in pixels, of an image sent to the model; larger ones are scaled down to it. */
  maxEdge: number;
  /** Largest image sent, counted as its base64 text (what the model's API measures). */
  maxBase64Bytes: number;
};

/**
 * What every model family Cursor serves takes (see docs/images.md for the sources): Anthropic's API
 * refuses an image over 5 MB and, with more than 20 images in one request, a side over 2000 px; OpenAI's
 * and Google's models accept at least as much. Within these, one image is never refused for its size.
 */
export const defaultImageLimits: ImageLimits = { maxEdge: 2000, maxBase64Bytes: 5 * 1024 * 1024 };

/** Decoding stops past this many input pixels (a decompression bomb is refused, not expanded). */
const maxInputPixels = 100_000_000;

/** Raster formats the bridge decodes. SVG is refused: a vector image is a document, not pixels. */
const acceptedFormats = new Set(['jpeg', 'png', 'gif', 'webp', 'avif', 'heif', 'tiff']);

export type NormalizedImage = {
  mediaType: 'image/png' | 'image/jpeg';
  /** Base64 of the image as sent. */
  data: string;
  width: number;
  height: number;
  /** The format the image arrived in (sharp's name: `png`, `gif`, `webp`, …). */
  sourceFormat: string;
  /** Whether the bytes differ from what arrived (re-encoded, scaled down or both). */
  changed: boolean;
};

const mediaTypeOfFormat: Record<string, string> = {
  jpeg: 'image/jpeg',
  png: 'image/png',
  gif: 'image/gif',
  webp: 'image/webp',
  avif: 'image/avif',
  heif: 'image/heif',
  tiff: 'image/tiff',
};

/** The media type of a format sharp recognised, for naming what arrived. */
export const mediaTypeOf = (format: string): string => mediaTypeOfFormat[format] ?? `image/${format}`;

const base64Length = (bytes: number): number => Math.ceil(bytes / 3) * 4;

/** JPEG qualities tried, in order, when an image is still too large at its scaled size. */
const jpegQualities = [90, 80, 70];

/**
 * `bytes` as PNG or JPEG within `limits`, or why it is not an image the bridge can send (one sentence,
 * safe to show the model and to log). A JPEG stays JPEG; any other format becomes PNG, which loses no pixel;
 * an image still over the byte limit becomes JPEG at lower qualities, then smaller.
 */
export const normalizeImage = async (
  bytes: Buffer,
  limits: ImageLimits = defaultImageLimits,
): Promise<Result<NormalizedImage, string>> => {
  let metadata: Metadata;
  try {
    metadata = await sharp(bytes, { limitInputPixels: maxInputPixels }).metadata();
  } catch {
    return { ok: false, error: 'the bytes are not an image the bridge can decode' };
  }
  const { format, width, height } = metadata;
  if (format === 'svg') return { ok: false, error: 'SVG is a vector image; only raster images are sent' };
  if (!acceptedFormats.has(format) || width === undefined || height === undefined)
    return { ok: false, error: `the ${format} format is not supported` };
  if (width * height > maxInputPixels)
    return { ok: false, error: `the image is too large to decode (${width}×${height} pixels)` };
  // EXIF orientation: what the width and height are once the image is shown upright.
  const upright = (metadata.orientation ?? 1) >= 5 ? { width: height, height: width } : { width, height };
  const fits = Math.max(upright.width, upright.height) <= limits.maxEdge;
  if ((format === 'png' || format === 'jpeg') && fits && base64Length(bytes.length) <= limits.maxBase64Bytes)
    return {
      ok: true,
      value: {
        mediaType: format === 'png' ? 'image/png' : 'image/jpeg',
        data: bytes.toString('base64'),
        ...upright,
        sourceFormat: format,
        changed: false,
      },
    };
  try {
    return { ok: true, value: await reencode(bytes, format, upright, limits) };
  } catch {
    return { ok: false, error: `the ${format} image could not be converted` };
  }
};

const reencode = async (
  bytes: Buffer,
  format: string,
  upright: { width: number; height: number },
  limits: ImageLimits,
): Promise<NormalizedImage> => {
  const toPng = format !== 'jpeg';
  let scale = Math.min(1, limits.maxEdge / Math.max(upright.width, upright.height));
  // Each pass tries PNG (when the image needs it) then lower JPEG qualities, then scales down by a quarter.
  for (let pass = 0; pass < 16; pass += 1) {
    const width = Math.max(1, Math.round(upright.width * scale));
    const height = Math.max(1, Math.round(upright.height * scale));
    // The first frame only (sharp's default `pages: 1`); `rotate()` applies the EXIF orientation.
    const pipeline = sharp(bytes, { limitInputPixels: maxInputPixels })
      .rotate()
      .resize({ width, height, fit: 'inside', withoutEnlargement: true });
    for (const quality of toPng ? [undefined, ...jpegQualities] : jpegQualities) {
      const last =
        quality === undefined
          ? await pipeline.clone().png({ compressionLevel: 9 }).toBuffer({ resolveWithObject: true })
          : await pipeline
              .clone()
              .flatten({ background: '#ffffff' })
              .jpeg({ quality, mozjpeg: true })
              .toBuffer({
                resolveWithObject: true,
              });
      if (base64Length(last.data.length) <= limits.maxBase64Bytes)
        return {
          mediaType: quality === undefined ? 'image/png' : 'image/jpeg',
          data: last.data.toString('base64'),
          width: last.info.width,
          height: last.info.height,
          sourceFormat: format,
          changed: true,
        };
    }
    scale *= 0.75;
  }
  throw new Error('the image did not fit the byte limit');
};
