import { describe, expect, it } from 'vitest';

import * as publicApi from '../src/index.js';

describe('public API (src/index.ts)', () => {
  it('exports no test double', () => {
    const doubles = Object.keys(publicApi).filter((name) => /scripted|fake|mock|stub|spy|dummy/i.test(name));
    expect(doubles).toEqual([]);
  });

  it('still exports the bridge, the server, the engine and the real upstream', () => {
    expect(Object.keys(publicApi)).toEqual(
      expect.arrayContaining(['createBridge', 'createBridgeServer', 'CursorUpstream', 'Engine']),
    );
  });
});
