/**
 * The fake backend records every image the real `@cursor/sdk` sends it: a user message's
 * (`selectedContext.selectedImages`) on its run request and in `receivedImages()`, a custom tool result's in
 * `receivedImages()`, each with the hash of its bytes and, decoded, its size and the hash of its pixels.
 * Also pins what the SDK (1.0.32) makes of an image's `mimeType`: a user message's is replaced by the type
 * the SDK sniffs (PNG and JPEG only), a tool result's is sent as given.
 */

import { createHash } from 'node:crypto';

import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { SDKCustomTool } from '@cursor/sdk';

import { describeImage, startSdkTestEnv } from './cursor-backend/index.js';
import type {
  FakeReceivedImage,
  FakeToolResult,
  ImageDescription,
  SdkTestEnv,
} from './cursor-backend/index.js';

/** Each fixture a different colour, so a pixel hash names which one arrived. */
const make = {
  png: () => sharp({ create: { width: 8, height: 6, channels: 3, background: '#0a0' } }).png(),
  jpeg: () => sharp({ create: { width: 8, height: 6, channels: 3, background: '#a00' } }).jpeg(),
  gif: () => sharp({ create: { width: 5, height: 4, channels: 3, background: '#00a' } }).gif(),
  webp: () =>
    sharp({ create: { width: 7, height: 3, channels: 3, background: '#aa0' } }).webp({ lossless: true }),
  tool: () => sharp({ create: { width: 4, height: 9, channels: 4, background: '#0aa8' } }).png(),
};
type Fixture = keyof typeof make;

const fixtures = {} as Record<Fixture, { bytes: Buffer; base64: string; want: ImageDescription }>;
const of = (name: Fixture): (typeof fixtures)[Fixture] => fixtures[name];

const sha256 = (bytes: Buffer): string => createHash('sha256').update(bytes).digest('hex');

/** What the fake must have recorded for a fixture that arrived byte for byte. */
const expectRecorded = (image: FakeReceivedImage | undefined, name: Fixture): void => {
  const { bytes, want } = of(name);
  expect(image).toBeDefined();
  expect(image).toMatchObject({
    sha256: want.sha256,
    size: bytes.length,
    sniffedType: want.sniffedType,
    width: want.width,
    height: want.height,
    pixelSha256: want.pixelSha256,
  });
  expect(image?.data.equals(bytes)).toBe(true);
};

describe('fake Cursor backend: images the real @cursor/sdk sends', () => {
  let env: SdkTestEnv;

  beforeAll(async () => {
    env = await startSdkTestEnv({ heartbeatMs: 1000 });
    for (const name of Object.keys(make) as Fixture[]) {
      const bytes = await make[name]().toBuffer();
      fixtures[name] = { bytes, base64: bytes.toString('base64'), want: await describeImage(bytes) };
    }
  });

  afterAll(async () => {
    await env?.cleanup();
  });

  const createAgent = () =>
    env.sdk.Agent.create({ model: { id: 'composer-2' }, local: { cwd: env.workspace } });

  it('describeImage: the hash of the bytes, the sniffed type, the size and the hash of the RGBA pixels', async () => {
    const { bytes, want } = of('png');
    const raw = await sharp(bytes).ensureAlpha().raw().toBuffer();
    expect(want).toEqual({
      sha256: sha256(bytes),
      sniffedType: 'image/png',
      width: 8,
      height: 6,
      pixelSha256: sha256(raw),
    });
    expect(raw).toHaveLength(8 * 6 * 4);
    expect(of('jpeg').want.sniffedType).toBe('image/jpeg');
    expect(of('gif').want.sniffedType).toBe('image/gif');
    expect(of('webp').want.sniffedType).toBe('image/webp');
    // The same pixels in another lossless format: other bytes, the same pixel hash.
    const asWebp = await describeImage(await sharp(bytes).webp({ lossless: true }).toBuffer());
    expect(asWebp.sha256).not.toBe(want.sha256);
    expect(asWebp.pixelSha256).toBe(want.pixelSha256);
  });

  it("records a user message's PNG and JPEG on its run request, with the mimeType the SDK sniffed", async () => {
    const imagesBefore = env.backend.receivedImages().length;
    env.backend.setScenario((run) => {
      run.text(`I see ${run.request.images.length} images.`);
      run.turnEnded({ inputTokens: 3, outputTokens: 4 });
    });
    const agent = await createAgent();
    const run = await agent.send({
      text: 'What are these?',
      images: [
        { data: of('png').base64, mimeType: 'image/png' },
        { data: of('jpeg').base64, mimeType: 'image/jpeg' },
      ],
    });
    const result = await run.wait();
    await agent[Symbol.asyncDispose]();

    expect(result).toMatchObject({ status: 'finished', result: 'I see 2 images.' });
    const request = env.backend.runRequests.at(-1);
    expect(request?.text).toBe('What are these?');
    expect(request?.images).toHaveLength(2);
    const [png, jpeg] = request?.images ?? [];
    expectRecorded(png, 'png');
    expectRecorded(jpeg, 'jpeg');
    expect(png).toMatchObject({
      source: 'user-message',
      runRequestIndex: request?.index,
      mimeType: 'image/png',
    });
    expect(jpeg).toMatchObject({
      source: 'user-message',
      runRequestIndex: request?.index,
      mimeType: 'image/jpeg',
    });
    expect(png?.toolCallId).toBeUndefined();
    // The wire form: inline bytes in `selectedContext.selectedImages`.
    const wire = (request?.json as { action: { userMessageAction: { userMessage: unknown } } }).action
      .userMessageAction.userMessage as {
      selectedContext: { selectedImages: Array<Record<string, unknown>> };
    };
    expect(wire.selectedContext.selectedImages).toHaveLength(2);
    expect(wire.selectedContext.selectedImages[0]).toMatchObject({
      data: of('png').base64,
      mimeType: 'image/png',
      uuid: expect.any(String) as unknown,
    });
    expect(env.backend.receivedImages().slice(imagesBefore)).toEqual([png, jpeg]);
  });

  it('records a GIF and a WebP as sent: the SDK drops their mimeType (it names only PNG and JPEG)', async () => {
    env.backend.setScenario((run) => run.text('ok'));
    const agent = await createAgent();
    const run = await agent.send({
      text: 'And these?',
      images: [
        { data: of('gif').base64, mimeType: 'image/gif' },
        { data: of('webp').base64, mimeType: 'image/webp' },
        // A mimeType that lies: the SDK sends the type of the bytes.
        { data: of('png').base64, mimeType: 'image/jpeg' },
      ],
    });
    await run.wait();
    await agent[Symbol.asyncDispose]();

    const images = env.backend.runRequests.at(-1)?.images ?? [];
    expect(images).toHaveLength(3);
    expectRecorded(images[0], 'gif');
    expectRecorded(images[1], 'webp');
    expectRecorded(images[2], 'png');
    expect(images.map((image) => image.mimeType)).toEqual([undefined, undefined, 'image/png']);
  });

  it("records a custom tool result's images as tool-result with the tool call id and the mimeType as given", async () => {
    const imagesBefore = env.backend.receivedImages().length;
    const results: FakeToolResult[] = [];
    env.backend.setScenario(async (run) => {
      results.push(
        await run.toolCall({ toolName: 'screenshot', callId: 'toolu_shot', toolCallId: 'shot-1' }),
      );
      run.text('Seen.');
      run.turnEnded({ inputTokens: 5, outputTokens: 1 });
    });
    const notAnImage = Buffer.from('not an image at all');
    const screenshot: SDKCustomTool = {
      description: 'Takes a screenshot',
      inputSchema: { type: 'object', properties: {} },
      execute: () => ({
        content: [
          { type: 'text', text: 'here it is' },
          { type: 'image', data: of('tool').base64, mimeType: 'image/png' },
          { type: 'image', data: of('webp').base64 },
          { type: 'image', data: notAnImage.toString('base64'), mimeType: 'image/png' },
        ],
      }),
    };
    const agent = await createAgent();
    const run = await agent.send('Take a screenshot', { local: { customTools: { screenshot } } });
    const result = await run.wait();
    await agent[Symbol.asyncDispose]();

    expect(result).toMatchObject({ status: 'finished', result: 'Seen.' });
    expect(results[0]).toMatchObject({ status: 'success', toolCallId: 'shot-1' });
    const request = env.backend.runRequests.at(-1);
    expect(request?.images).toEqual([]);
    const received = env.backend.receivedImages().slice(imagesBefore);
    expect(received).toHaveLength(3);
    const [tool, webp, broken] = received;
    expectRecorded(tool, 'tool');
    expect(tool).toMatchObject({
      source: 'tool-result',
      runRequestIndex: request?.index,
      toolCallId: 'shot-1',
      mimeType: 'image/png',
    });
    expectRecorded(webp, 'webp');
    expect(webp).toMatchObject({ source: 'tool-result', toolCallId: 'shot-1' });
    expect(webp?.mimeType).toBeUndefined();
    // Bytes sharp cannot decode: recorded with their hash, without size or pixels.
    expect(broken).toMatchObject({
      source: 'tool-result',
      toolCallId: 'shot-1',
      mimeType: 'image/png',
      sniffedType: 'unknown',
      size: notAnImage.length,
      sha256: sha256(notAnImage),
    });
    expect(broken?.width).toBeUndefined();
    expect(broken?.height).toBeUndefined();
    expect(broken?.pixelSha256).toBeUndefined();
  });

  it('lists every image in arrival order: user messages and tool results', async () => {
    const imagesBefore = env.backend.receivedImages().length;
    env.backend.setScenario(async (run) => {
      if (run.toolNames.includes('look')) await run.toolCall({ toolName: 'look', callId: 'toolu_look' });
      run.text('done');
    });
    const look: SDKCustomTool = {
      description: 'Looks',
      inputSchema: { type: 'object', properties: {} },
      execute: () => ({ content: [{ type: 'image', data: of('gif').base64, mimeType: 'image/gif' }] }),
    };
    const agent = await createAgent();
    const run = await agent.send(
      { text: 'Look', images: [{ data: of('jpeg').base64, mimeType: 'image/jpeg' }] },
      { local: { customTools: { look } } },
    );
    await run.wait();
    await agent[Symbol.asyncDispose]();

    const received = env.backend.receivedImages().slice(imagesBefore);
    expect(received.map((image) => [image.source, image.sha256, image.mimeType])).toEqual([
      ['user-message', of('jpeg').want.sha256, 'image/jpeg'],
      ['tool-result', of('gif').want.sha256, 'image/gif'],
    ]);
    expectRecorded(received[1], 'gif');
    // A copy: the caller cannot change the backend's list.
    received.length = 0;
    expect(env.backend.receivedImages().length - imagesBefore).toBe(2);
  });
});
