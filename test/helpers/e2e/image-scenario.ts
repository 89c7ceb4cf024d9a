/**
 * What the image e2e scenarios share: a screenshot-like PNG, the model that reads it with Claude Code's Read
 * tool, and the check that the backend received its pixels.
 */

import sharp from 'sharp';
import { expect } from 'vitest';

import { describeImage, type FakeReceivedImage } from '../../fakes/cursor-backend/index.js';
import type { ModelScenario } from './model-scenario.js';

/** A screenshot-like PNG: two colours, so a lost or altered pixel changes the hash. */
export const screenshot = async (): Promise<Buffer> => {
  const top = await sharp({ create: { width: 64, height: 20, channels: 3, background: '#1e6fd9' } })
    .png()
    .toBuffer();
  return sharp({ create: { width: 64, height: 40, channels: 3, background: '#f4f4f4' } })
    .composite([{ input: top, top: 0, left: 0 }])
    .png()
    .toBuffer();
};

/** The received image has the same pixels as `expected`, and went as PNG or JPEG. */
export const expectSamePixels = async (
  received: FakeReceivedImage | undefined,
  expected: Buffer,
): Promise<void> => {
  if (received === undefined) throw new Error('the backend received no image');
  expect(['image/png', 'image/jpeg']).toContain(received.sniffedType);
  const [got, want] = await Promise.all([describeImage(received.data), describeImage(expected)]);
  expect({ width: got.width, height: got.height }).toEqual({ width: want.width, height: want.height });
  expect(got.pixelSha256).toBe(want.pixelSha256);
};

/**
 * The model calls Claude Code's Read on the `…/shot.png` the user's prompt names (the sandbox is made per
 * run), then answers "It is a screenshot with a blue bar."
 */
export const readPngScenario: ModelScenario = {
  turns: [
    {
      steps: [
        {
          text: 'Reading it.',
          toolCalls: [
            {
              tool: 'Read',
              input: (context) => ({ file_path: /(\/\S+\/shot\.png)/.exec(context.prompt)?.[1] ?? '' }),
            },
          ],
        },
        { text: 'It is a screenshot with a blue bar.' },
      ],
    },
  ],
};
