/**
 * Images through the whole bridge and the REAL `@cursor/sdk` against the fake backend, which records every
 * image it receives (the user message's and the tool results'): what each protocol can carry — inline
 * base64, data URLs, http(s) URLs the bridge fetches, GIF and WebP it converts, tool-result images,
 * a replayed transcript's images — arrives as pixels; what cannot arrive (a loopback URL, a file id)
 * reaches the model as a note, and the turn still answers.
 */

import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

import sharp from 'sharp';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';

import { describeImage, type FakeReceivedImage } from '../fakes/cursor-backend/index.js';
import type { Scenario } from '../fakes/cursor-backend/run-context.js';
import {
  anthropicBashTool,
  closeWireBackend,
  startWireBridge,
  type WireBridge,
} from '../helpers/wire-bridge.js';

let wire: WireBridge | undefined;
afterEach(async () => {
  await wire?.close();
  wire = undefined;
});
afterAll(closeWireBackend);

/** The images of this file: each a different colour, so a hash names which one arrived. */
const fixtures = {
  png: sharp({ create: { width: 12, height: 8, channels: 3, background: '#c03030' } }).png(),
  jpeg: sharp({ create: { width: 12, height: 8, channels: 3, background: '#30c030' } }).jpeg(),
  webp: sharp({ create: { width: 12, height: 8, channels: 3, background: '#3030c0' } }).webp({
    lossless: true,
  }),
  served: sharp({ create: { width: 10, height: 10, channels: 3, background: '#c0c030' } }).png(),
  tool: sharp({ create: { width: 6, height: 6, channels: 3, background: '#30c0c0' } }).png(),
};
type Fixture = keyof typeof fixtures;
const bytes: Partial<Record<Fixture | 'gif' | 'gifFirstFrame', Buffer>> = {};
const of = (name: Fixture | 'gif' | 'gifFirstFrame'): Buffer => {
  const value = bytes[name];
  if (value === undefined) throw new Error(`fixture ${name} missing`);
  return value;
};
const base64 = (name: Fixture | 'gif'): string => of(name).toString('base64');

let imageServer: Server;
let imageBase = '';
beforeAll(async () => {
  for (const [name, pipeline] of Object.entries(fixtures)) bytes[name as Fixture] = await pipeline.toBuffer();
  // Two frames, magenta then yellow: only the first may arrive.
  const first = await sharp({ create: { width: 9, height: 7, channels: 4, background: '#ff00ffff' } })
    .png()
    .toBuffer();
  const second = await sharp({ create: { width: 9, height: 7, channels: 4, background: '#ffff00ff' } })
    .png()
    .toBuffer();
  bytes.gif = await sharp([first, second], { join: { animated: true } })
    .gif()
    .toBuffer();
  bytes.gifFirstFrame = await sharp(bytes.gif).png().toBuffer();
  imageServer = createServer((request, response) => {
    if (request.url === '/served.png')
      return void response.writeHead(200, { 'content-type': 'image/png' }).end(of('served'));
    if (request.url === '/photo.webp')
      return void response.writeHead(200, { 'content-type': 'image/webp' }).end(of('webp'));
    response.writeHead(404).end();
  });
  await new Promise<void>((resolve) => imageServer.listen(0, '127.0.0.1', resolve));
  imageBase = `http://127.0.0.1:${(imageServer.address() as AddressInfo).port}`;
});
afterAll(() => new Promise((resolve) => imageServer.close(resolve)));

/** The bridge may fetch from this file's image server (loopback is refused unless allowed). */
const allowLoopback = { cursorImages: { allowNetworks: ['127.0.0.1/32'] } };

const start = async (
  scenario: Scenario,
  config: Record<string, unknown> = allowLoopback,
): Promise<WireBridge> => {
  wire = await startWireBridge({ scenario, config });
  return wire;
};

const answer: Scenario = (run) => {
  run.text('Seen.');
  run.turnEnded({ inputTokens: 10, outputTokens: 2 });
};

/** A host tool call whose result the client answers; then the answer. */
const toolThenAnswer: Scenario = async (run) => {
  await run.toolCall({ toolName: 'Bash', args: { command: 'screenshot' } });
  run.text('Seen the screenshot.');
  run.turnEnded({ inputTokens: 10, outputTokens: 2 });
};

const post = async (bridge: WireBridge, path: string, body: unknown): Promise<Record<string, unknown>> => {
  const response = await fetch(`${bridge.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': 'sk-test', authorization: 'Bearer sk-test' },
    body: JSON.stringify(body),
  });
  const json = (await response.json()) as Record<string, unknown>;
  expect(response.status, JSON.stringify(json)).toBe(200);
  return json;
};

/** What the fake recorded of `expected`'s pixels: the bytes as sent, or the same pixels when converted. */
const expectReceived = async (
  received: FakeReceivedImage | undefined,
  expected: Buffer,
  how: 'as-sent' | 'converted' | 'same-pixels',
): Promise<void> => {
  const want = await describeImage(expected);
  if (received === undefined) throw new Error('no image arrived');
  if (how === 'as-sent') expect(received.sha256).toBe(want.sha256);
  if (how === 'converted') expect(received.sha256).not.toBe(want.sha256);
  expect((await describeImage(received.data)).pixelSha256).toBe(want.pixelSha256);
  expect(['image/png', 'image/jpeg']).toContain(received.sniffedType);
};

const userImages = (bridge: WireBridge): FakeReceivedImage[] =>
  bridge.runRequests().flatMap((request) => request.images);

const promptOf = (bridge: WireBridge): string => bridge.runRequests().at(-1)?.text ?? '';

const warnings = (bridge: WireBridge): Array<{ msg: string; image?: string; reason?: string }> =>
  bridge.logs
    .map((line) => JSON.parse(line) as { msg: string; level: number; image?: string; reason?: string })
    .filter((line) => line.level === 40 && line.msg === 'image not sent to the model');

describe('images in a new user message', () => {
  it('Anthropic: base64 PNG as sent, GIF as its first frame, a URL fetched, a file id noted', async () => {
    const bridge = await start(answer);
    const body = await post(bridge, '/v1/messages', {
      model: 'composer-2',
      max_tokens: 50,
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'What do these show?' },
            { type: 'image', source: { type: 'base64', media_type: 'image/png', data: base64('png') } },
            { type: 'image', source: { type: 'base64', media_type: 'image/gif', data: base64('gif') } },
            { type: 'image', source: { type: 'url', url: `${imageBase}/served.png` } },
            { type: 'image', source: { type: 'file', file_id: 'file_011CNha8iCJcU1wXNR6q4V8w' } },
          ],
        },
      ],
    });
    expect(body['content']).toEqual([{ type: 'text', text: 'Seen.' }]);
    const images = userImages(bridge);
    expect(images).toHaveLength(3);
    await expectReceived(images[0], of('png'), 'as-sent');
    await expectReceived(images[1], of('gifFirstFrame'), 'same-pixels');
    expect(images[1]?.sniffedType).toBe('image/png');
    await expectReceived(images[2], of('served'), 'as-sent');
    expect(promptOf(bridge)).toContain('file id "file_011CNha8iCJcU1wXNR6q4V8w"');
    expect(promptOf(bridge)).toContain('no Files API');
  });

  it('Chat Completions: a data URL, a percent-encoded data URL and a WebP by URL, each as pixels', async () => {
    const bridge = await start(answer);
    const percentEncoded = `data:image/jpeg,${[...of('jpeg')].map((byte) => `%${byte.toString(16).padStart(2, '0')}`).join('')}`;
    await post(bridge, '/v1/chat/completions', {
      model: 'composer-2',
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Compare.' },
            { type: 'image_url', image_url: { url: `data:image/png;base64,${base64('png')}` } },
            { type: 'image_url', image_url: { url: percentEncoded } },
            { type: 'image_url', image_url: { url: `${imageBase}/photo.webp`, detail: 'high' } },
          ],
        },
      ],
    });
    const images = userImages(bridge);
    expect(images).toHaveLength(3);
    await expectReceived(images[0], of('png'), 'as-sent');
    await expectReceived(images[1], of('jpeg'), 'as-sent');
    await expectReceived(images[2], of('webp'), 'converted');
    const metrics = await (await fetch(`${bridge.url}/metrics`)).text();
    expect(metrics).toContain('cursor_bridge_images_total{outcome="sent"} 2');
    expect(metrics).toContain('cursor_bridge_images_total{outcome="converted"} 1');
  });

  it('Responses: input_image by data URL and by URL; a file_id becomes a note', async () => {
    const bridge = await start(answer);
    await post(bridge, '/v1/responses', {
      model: 'composer-2',
      input: [
        {
          role: 'user',
          content: [
            { type: 'input_text', text: 'Look.' },
            { type: 'input_image', detail: 'auto', image_url: `data:image/gif;base64,${base64('gif')}` },
            { type: 'input_image', detail: 'auto', image_url: `${imageBase}/served.png` },
            { type: 'input_image', detail: 'auto', file_id: 'file-abc123' },
          ],
        },
      ],
    });
    const images = userImages(bridge);
    expect(images).toHaveLength(2);
    await expectReceived(images[0], of('gifFirstFrame'), 'same-pixels');
    await expectReceived(images[1], of('served'), 'as-sent');
    expect(promptOf(bridge)).toContain('file id "file-abc123"');
  });

  it('a URL the bridge may not fetch (loopback, by default) becomes a note and a warning; the turn answers', async () => {
    const bridge = await start(answer, {});
    const body = await post(bridge, '/v1/messages', {
      model: 'composer-2',
      max_tokens: 50,
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'And this?' },
            { type: 'image', source: { type: 'url', url: `${imageBase}/served.png` } },
          ],
        },
      ],
    });
    expect(body['content']).toEqual([{ type: 'text', text: 'Seen.' }]);
    expect(userImages(bridge)).toEqual([]);
    expect(promptOf(bridge)).toMatch(
      /An image was attached here but is not shown to you: .*127\.0\.0\.1.*loopback/,
    );
    expect(warnings(bridge)).toEqual([
      expect.objectContaining({
        image: `${imageBase}/served.png`,
        reason: expect.stringContaining('loopback'),
      }),
    ]);
    const metrics = await (await fetch(`${bridge.url}/metrics`)).text();
    expect(metrics).toContain('cursor_bridge_images_total{outcome="noted"} 1');
  });
});

describe('images in tool results', () => {
  const toolResults = (bridge: WireBridge): FakeReceivedImage[] =>
    bridge.backend.receivedImages().filter((image) => image.source === 'tool-result');

  it('Anthropic: a tool_result with an image block resumes the run with the image', async () => {
    const bridge = await start(toolThenAnswer);
    const request = (messages: unknown[]) => ({
      model: 'composer-2',
      max_tokens: 50,
      tools: [anthropicBashTool],
      messages,
    });
    const opening = [{ role: 'user', content: 'Take a screenshot.' }];
    const first = await post(bridge, '/v1/messages', request(opening));
    const call = (first['content'] as Array<{ type: string; id?: string }>).find(
      (block) => block.type === 'tool_use',
    );
    const before = toolResults(bridge).length;
    await post(
      bridge,
      '/v1/messages',
      request([
        ...opening,
        { role: 'assistant', content: first['content'] },
        {
          role: 'user',
          content: [
            {
              type: 'tool_result',
              tool_use_id: call?.id,
              content: [
                { type: 'text', text: 'screenshot:' },
                { type: 'image', source: { type: 'base64', media_type: 'image/webp', data: base64('webp') } },
              ],
            },
          ],
        },
      ]),
    );
    const received = toolResults(bridge).slice(before);
    expect(received).toHaveLength(1);
    await expectReceived(received[0], of('webp'), 'converted');
  });

  it('Chat Completions: a tool message with an image part', async () => {
    const bridge = await start(toolThenAnswer);
    const tools = [
      { type: 'function', function: { name: 'Bash', parameters: { type: 'object', properties: {} } } },
    ];
    const opening = [{ role: 'user', content: 'Take a screenshot.' }];
    const first = await post(bridge, '/v1/chat/completions', {
      model: 'composer-2',
      tools,
      messages: opening,
    });
    const message = (first['choices'] as Array<{ message: { tool_calls: Array<{ id: string }> } }>)[0]
      ?.message;
    const before = toolResults(bridge).length;
    await post(bridge, '/v1/chat/completions', {
      model: 'composer-2',
      tools,
      messages: [
        ...opening,
        { role: 'assistant', content: null, tool_calls: message?.tool_calls },
        {
          role: 'tool',
          tool_call_id: message?.tool_calls[0]?.id,
          content: [{ type: 'image_url', image_url: { url: `data:image/png;base64,${base64('tool')}` } }],
        },
      ],
    });
    const received = toolResults(bridge).slice(before);
    expect(received).toHaveLength(1);
    await expectReceived(received[0], of('tool'), 'as-sent');
  });

  it('Responses: a function_call_output with an input_image by URL', async () => {
    const bridge = await start(toolThenAnswer);
    const tools = [{ type: 'function', name: 'Bash', parameters: { type: 'object', properties: {} } }];
    const opening = [{ role: 'user', content: 'Take a screenshot.' }];
    const first = await post(bridge, '/v1/responses', { model: 'composer-2', tools, input: opening });
    const call = (
      first['output'] as Array<{ type: string; call_id?: string; name?: string; arguments?: string }>
    ).find((item) => item.type === 'function_call');
    const before = toolResults(bridge).length;
    await post(bridge, '/v1/responses', {
      model: 'composer-2',
      tools,
      input: [
        ...opening,
        { type: 'function_call', call_id: call?.call_id, name: call?.name, arguments: call?.arguments },
        {
          type: 'function_call_output',
          call_id: call?.call_id,
          output: [{ type: 'input_image', image_url: `${imageBase}/served.png` }],
        },
      ],
    });
    const received = toolResults(bridge).slice(before);
    expect(received).toHaveLength(1);
    await expectReceived(received[0], of('served'), 'as-sent');
  });
});

describe('images of a replayed transcript', () => {
  it("a fresh agent gets the conversation's earlier images with its first prompt", async () => {
    const bridge = await start(answer);
    await post(bridge, '/v1/messages', {
      model: 'composer-2',
      max_tokens: 50,
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Here is the design.' },
            { type: 'image', source: { type: 'base64', media_type: 'image/png', data: base64('png') } },
          ],
        },
        { role: 'assistant', content: 'Got it.' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'And the result — do they match?' },
            { type: 'image', source: { type: 'base64', media_type: 'image/jpeg', data: base64('jpeg') } },
          ],
        },
      ],
    });
    const [request] = bridge.runRequests();
    expect(request?.images).toHaveLength(2);
    await expectReceived(request?.images[0], of('png'), 'as-sent');
    await expectReceived(request?.images[1], of('jpeg'), 'as-sent');
    expect(request?.text).toMatch(/Here is the design\.\n\[image 1 attached\][\s\S]*\[image 2 attached\]/);
  });
});

describe('the model for images', () => {
  const pasted = (text: string) => ({
    model: 'claude-sonnet-4-5',
    max_tokens: 50,
    messages: [
      {
        role: 'user',
        content: [
          { type: 'text', text },
          { type: 'image', source: { type: 'base64', media_type: 'image/png', data: base64('png') } },
        ],
      },
    ],
  });

  it('Router.image runs a request whose latest turn carries an image; one without runs on the default', async () => {
    const bridge = await start(answer, { Router: { default: 'cursor,composer-2', image: 'cursor,gpt-5.4' } });
    await post(bridge, '/v1/messages', pasted('What is this?'));
    await post(bridge, '/v1/messages', {
      model: 'claude-sonnet-4-5',
      max_tokens: 50,
      messages: [{ role: 'user', content: 'Just text.' }],
    });
    const [withImage, withoutImage] = bridge.runRequests();
    expect(withImage?.requestedModel?.modelId).toBe('gpt-5.4');
    expect(withImage?.images).toHaveLength(1);
    expect(withoutImage?.requestedModel?.modelId).toBe('composer-2');
  });

  it('a model the config lists as text-only gets a note in place of each image', async () => {
    const bridge = await start(answer, { cursorImages: { textOnlyModels: ['composer-2'] } });
    const body = await post(bridge, '/v1/messages', pasted('What is this?'));
    expect(body['content']).toEqual([{ type: 'text', text: 'Seen.' }]);
    expect(userImages(bridge)).toEqual([]);
    expect(promptOf(bridge)).toContain(
      'not shown to you: the model composer-2 takes no images (the config lists it in cursorImages.textOnlyModels',
    );
    expect(warnings(bridge)).toHaveLength(1);
  });
});
