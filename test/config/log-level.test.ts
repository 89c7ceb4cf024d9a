import { describe, expect, it } from 'vitest';
import { resolveLogLevel } from '../../src/config/log-level.js';

describe('resolveLogLevel', () => {
  it("takes the config's level when LOG_LEVEL is unset or empty", () => {
    expect(resolveLogLevel({}, 'info')).toEqual({ ok: true, value: 'info' });
    expect(resolveLogLevel({ LOG_LEVEL: '  ' }, 'warn')).toEqual({ ok: true, value: 'warn' });
  });

  it('lets LOG_LEVEL override it, case-insensitively', () => {
    expect(resolveLogLevel({ LOG_LEVEL: ' DEBUG ' }, 'info')).toEqual({ ok: true, value: 'debug' });
  });

  it('names the variable, the levels and the value for anything else', () => {
    expect(resolveLogLevel({ LOG_LEVEL: 'loud' }, 'info')).toEqual({
      ok: false,
      error: 'LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent, got "loud"',
    });
  });
});
