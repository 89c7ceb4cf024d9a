import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

import sharp from 'sharp';
import { afterEach, describe, expect, it } from 'vitest';

import {
  createImagePreparer,
  defaultImageSettings,
  type ImageSettings,
} from '../../src/images/image-preparer.js';
import type { TurnMessage, TurnUserPart } from '../../src/turn/turn-request.js';

const png = (background: string, width = 8, height = 6): Promise<Buffer> =>
  sharp({ create: { width, height, channels: 3, background } })
    .png()
    .toBuffer();

const inline = (bytes: Buffer, mediaType = 'image/png'): TurnUserPart => ({
  type: 'image',
  source: { kind: 'base64', mediaType, data: bytes.toString('base64') },
});

const byUrl = (url: string): TurnUserPart => ({ type: 'image', source: { kind: 'url', url } });

const user = (...content: TurnUserPart[]): TurnMessage => ({ role: 'user', content });

const partsOf = (messages: readonly TurnMessage[]): TurnUserPart[] =>
  messages.flatMap((message) => (message.role === 'user' || message.role === 'tool' ? message.content : []));

const imagesOf = (messages: readonly TurnMessage[]): Array<{ mediaType: string; data: string }> =>
  partsOf(messages).flatMap((part) =>
    part.type === 'image' && part.source.kind === 'base64'
      ? [{ mediaType: part.source.mediaType, data: part.source.data }]
      : [],
  );

const notesOf = (messages: readonly TurnMessage[]): string[] =>
  partsOf(messages).flatMap((part) =>
    part.type === 'text' && part.text.startsWith('[An image') ? [part.text] : [],
  );

let server: Server | undefined;
afterEach(async () => {
  await new Promise((resolve) => (server === undefined ? resolve(undefined) : server.close(resolve)));
  server = undefined;
});

/** A local image server; returns its base URL and how many requests it answered. */
const serve = async (
  routes: Record<string, { type: string; body: Buffer }>,
): Promise<{ url: string; hits: () => number }> => {
  let hits = 0;
  server = createServer((request, response) => {
    hits += 1;
    const route = routes[request.url ?? ''];
    if (route === undefined) return void response.writeHead(404).end();
    response.writeHead(200, { 'content-type': route.type }).end(route.body);
  });
  await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, hits: () => hits };
};

const withLoopback: ImageSettings = {
  ...defaultImageSettings,
  fetch: { ...defaultImageSettings.fetch, allowNetworks: ['127.0.0.1/32'] },
};

describe('createImagePreparer', () => {
  it('returns messages without images as they are', async () => {
    const messages: TurnMessage[] = [user({ type: 'text', text: 'hi' })];
    const prepared = await createImagePreparer().prepare(messages, { replay: false });
    expect(prepared).toEqual({ messages, sent: 0, converted: 0, problems: [] });
  });

  it('sends inline PNGs as they are and converts a GIF, in user messages and tool results', async () => {
    const red = await png('#ff0000');
    const gif = await sharp({ create: { width: 5, height: 5, channels: 3, background: '#00f' } })
      .gif()
      .toBuffer();
    const messages: TurnMessage[] = [
      user({ type: 'text', text: 'look' }, inline(red)),
      { role: 'tool', toolCallId: 'call_1', content: [inline(gif, 'image/gif')], isError: false },
    ];
    const prepared = await createImagePreparer().prepare(messages, { replay: false });
    expect(prepared).toMatchObject({ sent: 2, converted: 1, problems: [] });
    const [first, second] = imagesOf(prepared.messages);
    expect(first).toEqual({ mediaType: 'image/png', data: red.toString('base64') });
    expect(second?.mediaType).toBe('image/png');
    expect((await sharp(Buffer.from(second?.data ?? '', 'base64')).metadata()).format).toBe('png');
    expect(prepared.messages[1]).toMatchObject({ role: 'tool', toolCallId: 'call_1', isError: false });
  });

  it('replaces an image it cannot send with a note saying why, and goes on', async () => {
    const messages: TurnMessage[] = [
      user(inline(Buffer.from('not an image at all'), 'image/png'), { type: 'text', text: 'and this' }),
    ];
    const prepared = await createImagePreparer().prepare(messages, { replay: false });
    expect(prepared.sent).toBe(0);
    expect(prepared.problems).toEqual([
      {
        image: expect.stringContaining('inline image/png'),
        reason: 'the bytes are not an image the bridge can decode',
      },
    ]);
    expect(notesOf(prepared.messages)).toEqual([
      '[An image was attached here but is not shown to you: the bytes are not an image the bridge can decode.]',
    ]);
    expect(partsOf(prepared.messages).at(-1)).toEqual({ type: 'text', text: 'and this' });
  });

  it('keeps only the latest images of a replayed transcript, noting the earlier ones', async () => {
    const colours = ['#100000', '#200000', '#300000', '#400000'];
    const images = await Promise.all(colours.map((colour) => png(colour)));
    const messages = images.map((bytes) => user(inline(bytes)));
    const preparer = createImagePreparer({ ...defaultImageSettings, maxReplayedImages: 3 });
    const replayed = await preparer.prepare(messages, { replay: true });
    expect(imagesOf(replayed.messages).map((image) => image.data)).toEqual(
      images.slice(1).map((bytes) => bytes.toString('base64')),
    );
    expect(notesOf(replayed.messages)).toEqual([
      '[An image was attached here but is not shown to you: a replayed conversation carries only its latest 3 images.]',
    ]);
    // Not a replay: every image of the new messages goes.
    expect((await preparer.prepare(messages, { replay: false })).sent).toBe(4);
  });

  it('fetches an image given by URL and sends its bytes', async () => {
    const blue = await png('#0000ff');
    const site = await serve({ '/blue.png': { type: 'image/png', body: blue } });
    const prepared = await createImagePreparer(withLoopback).prepare([user(byUrl(`${site.url}/blue.png`))], {
      replay: false,
    });
    expect(imagesOf(prepared.messages)).toEqual([{ mediaType: 'image/png', data: blue.toString('base64') }]);
    expect(site.hits()).toBe(1);
  });

  it('checks the fetched bytes: an image/png that is not an image becomes a note', async () => {
    const site = await serve({ '/fake.png': { type: 'image/png', body: Buffer.from('<html></html>') } });
    const prepared = await createImagePreparer(withLoopback).prepare([user(byUrl(`${site.url}/fake.png`))], {
      replay: false,
    });
    expect(prepared.sent).toBe(0);
    expect(notesOf(prepared.messages)[0]).toContain('did not give an image: the bytes are not an image');
  });

  it('refuses a loopback URL by default and tells the model why, without a request', async () => {
    const site = await serve({ '/x.png': { type: 'image/png', body: await png('#fff') } });
    const prepared = await createImagePreparer().prepare([user(byUrl(`${site.url}/x.png`))], {
      replay: false,
    });
    expect(prepared.sent).toBe(0);
    expect(prepared.problems[0]?.image).toBe(`${site.url}/x.png`);
    expect(notesOf(prepared.messages)[0]).toMatch(/127\.0\.0\.1.*loopback/);
    expect(site.hits()).toBe(0);
  });

  it('notes every image when told the model takes none', async () => {
    const prepared = await createImagePreparer().prepare(
      [user(inline(await png('#abc')), byUrl('https://example.com/a.png'))],
      {
        replay: false,
        refuse: 'the model text-1 takes no images',
      },
    );
    expect(prepared.sent).toBe(0);
    expect(notesOf(prepared.messages)).toEqual([
      '[An image was attached here but is not shown to you: the model text-1 takes no images.]',
      '[An image was attached here but is not shown to you: the model text-1 takes no images.]',
    ]);
  });

  it('never logs or notes the query of a URL (a signed URL carries its secret there)', async () => {
    const site = await serve({});
    const url = `${site.url}/shot.png?X-Amz-Signature=s3cr3t&token=abc#frag`;
    const prepared = await createImagePreparer(withLoopback).prepare([user(byUrl(url))], { replay: false });
    expect(prepared.problems).toEqual([
      { image: `${site.url}/shot.png?…`, reason: expect.stringContaining('404') },
    ]);
    expect(JSON.stringify(prepared)).not.toMatch(/s3cr3t|token=abc|frag/);
  });

  it('notes a URL image when fetching is off', async () => {
    const prepared = await createImagePreparer({ ...defaultImageSettings, fetchUrls: false }).prepare(
      [user(byUrl('https://example.com/a.png'))],
      { replay: false },
    );
    expect(notesOf(prepared.messages)).toEqual([
      '[An image was attached here but is not shown to you: it is given by URL (https://example.com/a.png) and fetching image URLs is off.]',
    ]);
  });

  it('sends a converted image identically on a later turn and in a replay', async () => {
    const webp = await sharp({ create: { width: 300, height: 300, channels: 3, background: '#0f0' } })
      .webp()
      .toBuffer();
    const preparer = createImagePreparer();
    const first = await preparer.prepare([user(inline(webp, 'image/webp'))], { replay: false });
    const second = await preparer.prepare([user(inline(webp, 'image/webp'))], { replay: true });
    expect(imagesOf(second.messages)).toEqual(imagesOf(first.messages));
    expect(first.converted).toBe(1);
  });
});
