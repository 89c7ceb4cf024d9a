import { randomBytes } from 'node:crypto';

import sharp, { type Sharp } from 'sharp';
import { describe, expect, it } from 'vitest';

import { normalizeImage } from '../../src/images/normalize-image.js';

const solid = (width: number, height: number, background: string): Sharp =>
  sharp({ create: { width, height, channels: 4, background } });

/** Random pixels: they do not compress, so the encoded size tracks the pixel count. */
const noise = (width: number, height: number): Sharp => {
  return sharp(randomBytes(width * height * 3), { raw: { width, height, channels: 3 } });
};

const decode = async (data: string): Promise<{ format: string; width: number; height: number }> => {
  const metadata = await sharp(Buffer.from(data, 'base64')).metadata();
  return { format: metadata.format, width: metadata.width ?? 0, height: metadata.height ?? 0 };
};

const firstPixel = async (data: string): Promise<number[]> => [
  ...(await sharp(Buffer.from(data, 'base64')).ensureAlpha().raw().toBuffer()).subarray(0, 4),
];

describe('normalizeImage', () => {
  it('passes a PNG or JPEG within the limits through byte for byte', async () => {
    for (const bytes of [
      await solid(40, 30, '#336699ff').png().toBuffer(),
      await solid(40, 30, '#336699ff').jpeg().toBuffer(),
    ]) {
      const result = await normalizeImage(bytes);
      expect(result.ok).toBe(true);
      if (!result.ok) continue;
      expect(result.value.changed).toBe(false);
      expect(result.value.data).toBe(bytes.toString('base64'));
      expect([result.value.width, result.value.height]).toEqual([40, 30]);
    }
  });

  it('sends the first frame of an animated GIF as PNG', async () => {
    const red = await solid(4, 3, '#ff0000ff').png().toBuffer();
    const blue = await solid(4, 3, '#0000ffff').png().toBuffer();
    const gif = await sharp([red, blue], { join: { animated: true } })
      .gif()
      .toBuffer();
    const result = await normalizeImage(gif);
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(result.value).toMatchObject({ mediaType: 'image/png', sourceFormat: 'gif', changed: true });
    expect(await decode(result.value.data)).toEqual({ format: 'png', width: 4, height: 3 });
    expect(await firstPixel(result.value.data)).toEqual([255, 0, 0, 255]);
  });

  it('sends WebP as PNG, transparency kept, and as JPEG only when PNG is over the byte limit', async () => {
    const opaque = await normalizeImage(await solid(16, 16, '#00ff00ff').webp().toBuffer());
    const clear = await normalizeImage(await solid(16, 16, '#00ff0080').webp({ lossless: true }).toBuffer());
    expect(opaque.ok && opaque.value.mediaType).toBe('image/png');
    expect(clear.ok && clear.value.mediaType).toBe('image/png');
    if (clear.ok) expect((await firstPixel(clear.value.data))[3]).toBe(128);
    const photo = await noise(500, 500).webp({ quality: 80 }).toBuffer();
    const limited = await normalizeImage(photo, { maxEdge: 2000, maxBase64Bytes: 400_000 });
    expect(limited.ok && limited.value.mediaType).toBe('image/jpeg');
  });

  it('converts AVIF and TIFF too', async () => {
    for (const bytes of [
      await solid(16, 16, '#ff00ffff').avif().toBuffer(),
      await solid(16, 16, '#ff00ffff').tiff().toBuffer(),
    ]) {
      const result = await normalizeImage(bytes);
      expect(result.ok && ['image/png', 'image/jpeg'].includes(result.value.mediaType)).toBe(true);
    }
  });

  it('scales an image larger than the longest side down, keeping its aspect and format', async () => {
    const result = await normalizeImage(await solid(3000, 1000, '#123456ff').png().toBuffer());
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(result.value.mediaType).toBe('image/png');
    expect(await decode(result.value.data)).toEqual({ format: 'png', width: 2000, height: 667 });
  });

  it('brings an image over the byte limit under it, as JPEG and smaller if it must', async () => {
    const png = await noise(600, 600).png().toBuffer();
    const limits = { maxEdge: 2000, maxBase64Bytes: 60_000 };
    expect(Math.ceil(png.length / 3) * 4).toBeGreaterThan(limits.maxBase64Bytes);
    const result = await normalizeImage(png, limits);
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(result.value.data.length).toBeLessThanOrEqual(limits.maxBase64Bytes);
    expect(result.value.mediaType).toBe('image/jpeg');
  });

  it('applies the EXIF orientation when it re-encodes', async () => {
    // 40×20 stored, shown rotated a quarter turn (orientation 6): upright it is 20×40.
    const jpeg = await solid(40, 20, '#ff0000ff').jpeg().withMetadata({ orientation: 6 }).toBuffer();
    const result = await normalizeImage(jpeg, { maxEdge: 30, maxBase64Bytes: 5_000_000 });
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(await decode(result.value.data)).toEqual({ format: 'jpeg', width: 15, height: 30 });
  });

  it('refuses SVG and bytes that are not an image, saying why', async () => {
    const svg = Buffer.from('<svg xmlns="http://www.w3.org/2000/svg" width="4" height="4"></svg>');
    expect(await normalizeImage(svg)).toEqual({ ok: false, error: expect.stringContaining('SVG') });
    expect(await normalizeImage(Buffer.from('<html>not an image</html>'))).toEqual({
      ok: false,
      error: 'the bytes are not an image the bridge can decode',
    });
  });
});
