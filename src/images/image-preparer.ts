/**
 * Turns the images of the messages a turn sends into what the model can take: an image the client sent by
 * URL is fetched (bounded, public addresses only: `fetch-image-url.ts`), every image is made PNG or JPEG
 * within the model's size limits (`normalize-image.ts`), and an image that cannot be sent becomes a note
 * in its place that says why — the turn itself never fails for an image. A replayed transcript carries
 * its latest images only, up to a bound; earlier ones become notes too.
 */

import { createHash } from 'node:crypto';

import type { TurnImagePart, TurnMessage, TurnUserPart } from '../turn/turn-request.js';
import {
  defaultImageFetchOptions,
  fetchImageUrl,
  shownUrl,
  type ImageFetchOptions,
} from './fetch-image-url.js';
import {
  defaultImageLimits,
  normalizeImage,
  type ImageLimits,
  type NormalizedImage,
} from './normalize-image.js';

export type ImageSettings = {
  /** Whether images given by URL are fetched (off: each becomes a note). */
  fetchUrls: boolean;
  fetch: ImageFetchOptions;
  limits: ImageLimits;
  /** The most images one prompt carries when a transcript is replayed to a fresh agent: the latest ones. */
  maxReplayedImages: number;
};

/**
 * Twenty: Anthropic's API takes up to 100 images in a request, but with more than 20 it refuses any side
 * over 2000 px; a replay of a long, screenshot-heavy conversation keeps its latest twenty.
 */
export const defaultMaxReplayedImages = 20;

export const defaultImageSettings: ImageSettings = {
  fetchUrls: true,
  fetch: defaultImageFetchOptions,
  limits: defaultImageLimits,
  maxReplayedImages: defaultMaxReplayedImages,
};

/** An image that did not reach the model, and why (for the log: no image data, the URL clipped). */
export type ImageProblem = { image: string; reason: string };

export type PreparedImages = {
  messages: TurnMessage[];
  /** Images sent (after conversion). */
  sent: number;
  /** Images sent re-encoded or scaled down. */
  converted: number;
  problems: ImageProblem[];
};

export type PrepareImagesOptions = {
  /** The messages are a whole transcript for a fresh agent: at most `maxReplayedImages`, the latest. */
  replay: boolean;
  /** Why no image may go (the model takes none): every image becomes a note saying so. */
  refuse?: string;
  signal?: AbortSignal;
};

export interface ImagePreparer {
  prepare(messages: readonly TurnMessage[], options: PrepareImagesOptions): Promise<PreparedImages>;
}

/** What the model reads in place of an image it cannot see. */
export const imageNote = (reason: string): TurnUserPart => ({
  type: 'text',
  text: `[An image was attached here but is not shown to you: ${reason}.]`,
});

type Outcome = { ok: true; image: NormalizedImage } | { ok: false; reason: string };

/** Images of one turn fetched and converted at once. */
const maxConcurrent = 4;

/** Bytes of converted images kept for a transcript's next replay or an identical retry. */
const cacheBudgetBytes = 64 * 1024 * 1024;
/** How long an image fetched by URL is reused before it is fetched again. */
const urlCacheTtlMs = 10 * 60_000;

/**
 * Converted (or fetched) images by content (or URL), least recently used first, bounded by their total size:
 * the same screenshot goes out again with each replay of its conversation and is converted once.
 */
class ImageCache {
  readonly #entries = new Map<string, { image: NormalizedImage; at: number }>();
  #bytes = 0;

  get(key: string, maxAgeMs: number): NormalizedImage | undefined {
    const entry = this.#entries.get(key);
    if (entry === undefined) return undefined;
    this.#entries.delete(key);
    if (Date.now() - entry.at > maxAgeMs) {
      this.#bytes -= entry.image.data.length;
      return undefined;
    }
    this.#entries.set(key, entry);
    return entry.image;
  }

  set(key: string, image: NormalizedImage): void {
    if (image.data.length > cacheBudgetBytes / 4) return;
    const previous = this.#entries.get(key);
    if (previous !== undefined) this.#bytes -= previous.image.data.length;
    this.#entries.delete(key);
    this.#entries.set(key, { image, at: Date.now() });
    this.#bytes += image.data.length;
    for (const [oldest, entry] of this.#entries) {
      if (this.#bytes <= cacheBudgetBytes) break;
      this.#entries.delete(oldest);
      this.#bytes -= entry.image.data.length;
    }
  }
}

/** An image for the log and the model's note: a URL without its query (see {@link shownUrl}), or its size. */
const describe = (part: TurnImagePart): string =>
  part.source.kind === 'url'
    ? shownUrl(part.source.url)
    : `inline ${part.source.mediaType || 'image'} (${part.source.data.length} base64 chars)`;

export const createImagePreparer = (settings: ImageSettings = defaultImageSettings): ImagePreparer => {
  const cache = new ImageCache();

  /**
   * Kept: what cost work to make (a conversion, a fetch). An inline image sent as it came is only checked,
   * so it is not kept past its request.
   */
  const fromBytes = async (
    bytes: Buffer,
    key: string,
    maxAgeMs: number,
    fetched: boolean,
  ): Promise<Outcome> => {
    const cached = cache.get(key, maxAgeMs);
    if (cached !== undefined) return { ok: true, image: cached };
    const normalized = await normalizeImage(bytes, settings.limits);
    if (!normalized.ok) return { ok: false, reason: normalized.error };
    if (fetched || normalized.value.changed) cache.set(key, normalized.value);
    return { ok: true, image: normalized.value };
  };

  const prepareOne = async (part: TurnImagePart, signal: AbortSignal | undefined): Promise<Outcome> => {
    const { source } = part;
    if (source.kind === 'base64') {
      const key = `sha256:${createHash('sha256').update(source.data).digest('hex')}`;
      return fromBytes(Buffer.from(source.data, 'base64'), key, Number.POSITIVE_INFINITY, false);
    }
    const key = `url:${source.url}`;
    const cached = cache.get(key, urlCacheTtlMs);
    if (cached !== undefined) return { ok: true, image: cached };
    if (!settings.fetchUrls)
      return {
        ok: false,
        reason: `it is given by URL (${describe(part)}) and fetching image URLs is off`,
      };
    const fetched = await fetchImageUrl(source.url, settings.fetch, signal);
    if (!fetched.ok) return { ok: false, reason: fetched.error.message };
    const outcome = await fromBytes(fetched.value.bytes, key, urlCacheTtlMs, true);
    return outcome.ok
      ? outcome
      : { ok: false, reason: `${describe(part)} did not give an image: ${outcome.reason}` };
  };

  return {
    async prepare(messages, options) {
      const images: TurnImagePart[] = [];
      for (const message of messages) {
        if (message.role !== 'user' && message.role !== 'tool') continue;
        for (const part of message.content) if (part.type === 'image') images.push(part);
      }
      const result: PreparedImages = { messages: [...messages], sent: 0, converted: 0, problems: [] };
      if (images.length === 0) return result;
      const { refuse } = options;
      const omitted =
        refuse !== undefined
          ? images.length
          : options.replay
            ? Math.max(0, images.length - settings.maxReplayedImages)
            : 0;
      const outcomes = new Map<TurnImagePart, Outcome>();
      images.slice(0, omitted).forEach((part) =>
        outcomes.set(part, {
          ok: false,
          reason:
            refuse ?? `a replayed conversation carries only its latest ${settings.maxReplayedImages} images`,
        }),
      );
      // A few at a time: each may hold a fetched body (up to the byte cap) and a decoded image.
      const sent = images.slice(omitted);
      let next = 0;
      const worker = async (): Promise<void> => {
        for (let index = next++; index < sent.length; index = next++) {
          const part = sent[index] as TurnImagePart;
          outcomes.set(part, await prepareOne(part, options.signal));
        }
      };
      await Promise.all(Array.from({ length: Math.min(maxConcurrent, sent.length) }, worker));
      for (const part of images) {
        const outcome = outcomes.get(part);
        if (outcome === undefined) continue;
        if (outcome.ok) {
          result.sent += 1;
          if (outcome.image.changed) result.converted += 1;
        } else result.problems.push({ image: describe(part), reason: outcome.reason });
      }
      const convert = (part: TurnUserPart): TurnUserPart => {
        if (part.type !== 'image') return part;
        const outcome = outcomes.get(part);
        if (outcome === undefined) return part;
        return outcome.ok
          ? {
              type: 'image',
              source: { kind: 'base64', mediaType: outcome.image.mediaType, data: outcome.image.data },
            }
          : imageNote(outcome.reason);
      };
      result.messages = messages.map((message) =>
        message.role === 'user' || message.role === 'tool'
          ? { ...message, content: message.content.map(convert) }
          : message,
      );
      return result;
    },
  };
};
