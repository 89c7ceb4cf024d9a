import { describe, expect, it } from 'vitest';
import { decideSandbox } from '../../src/bridge/sandbox.js';

describe('decideSandbox', () => {
  it.each([
    [false, false, 'linux', false, /not requested/],
    [true, false, 'linux', true, /requested/],
    [true, false, 'darwin', true, /requested/],
    [true, true, 'linux', false, /container/],
    [true, false, 'win32', false, /not supported on win32/],
  ] as const)(
    'requested=%s container=%s %s → enabled=%s',
    (requested, inContainer, platform, enabled, reason) => {
      const decision = decideSandbox(requested, { inContainer, platform });
      expect(decision.enabled).toBe(enabled);
      expect(decision.reason).toMatch(reason);
    },
  );
});
