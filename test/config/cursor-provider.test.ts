import { describe, expect, it } from 'vitest';

import {
  getTransformerEntryName,
  isCursorProvider,
  isCursorTransformerPath,
} from '../../src/config/cursor-provider.js';

describe('isCursorProvider', () => {
  it.each([
    [{ name: 'cursor' }, true],
    [{ name: 'CURSOR' }, true],
    [{ name: 'x', transformer: { use: ['cursor-sdk'] } }, true],
    [{ name: 'x', transformer: { use: ['openrouter', ['cursor-sdk', { cursorMode: 'plan' }]] } }, true],
    [{ name: 'x', transformer: { use: [['cursor-sdk']] } }, true],
    [{ name: 'cursor-pro' }, false],
    [{ name: 'x', transformer: { use: ['cursor-sdk-extra', ['maxtoken', { max_tokens: 1 }]] } }, false],
    [{ name: 'x', transformer: { 'gpt-5.4': { use: ['cursor-sdk'] } } }, false],
    [{ name: 'x', transformer: { use: 'cursor-sdk' } }, false],
    [null, false],
    ['cursor', false],
    [['cursor'], false],
  ])('%j → %s', (provider, expected) => {
    expect(isCursorProvider(provider)).toBe(expected);
  });
});

describe('getTransformerEntryName', () => {
  it.each([
    ['cursor-sdk', 'cursor-sdk'],
    [['cursor-sdk', {}], 'cursor-sdk'],
    [[42], undefined],
    [{ name: 'cursor-sdk' }, undefined],
  ])('%j → %s', (entry, expected) => {
    expect(getTransformerEntryName(entry)).toBe(expected);
  });
});

describe('isCursorTransformerPath', () => {
  it.each([
    ['/opt/ccr/plugins/cursor-sdk.js', true],
    ['/opt/ccr/plugins/cursor-sdk.cjs', true],
    ['/opt/ccr/plugins/cursor-sdk', true],
    ['C:\\plugins\\cursor-sdk.js', true],
    ['cursor-bridge/dist/ccr/cursor-sdk.mjs', true],
    ['/opt/ccr/plugins/cursor-sdk-helper.js', false],
    ['/opt/ccr/plugins/gemini.js', false],
  ])('%s → %s', (path, expected) => {
    expect(isCursorTransformerPath(path)).toBe(expected);
  });
});
