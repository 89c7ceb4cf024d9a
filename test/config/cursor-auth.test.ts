import { describe, expect, it } from 'vitest';

import { resolveCursorApiKey } from '../../src/config/cursor-auth.js';

const notFound =
  'Cursor API key not found: Set Providers[].api_key to a key starting with crsr_, or export CURSOR_API_KEY. ' +
  'Placeholders like $CURSOR_API_KEY only work when the env var is actually set.';

type Case = {
  name: string;
  configured: string | undefined;
  envKey?: string;
  expected:
    | { ok: true; value: { apiKey: string; source: 'config' | 'env' } }
    | { ok: false; error: { reason: 'not-found' | 'wrong-prefix'; message: string | RegExp } };
};

const cases: Case[] = [
  {
    name: 'concrete crsr_ key in config',
    configured: 'crsr_conf',
    expected: { ok: true, value: { apiKey: 'crsr_conf', source: 'config' } },
  },
  {
    name: 'config key wins over env',
    configured: 'crsr_conf',
    envKey: 'crsr_env',
    expected: { ok: true, value: { apiKey: 'crsr_conf', source: 'config' } },
  },
  {
    name: 'no config key, env key',
    configured: undefined,
    envKey: 'crsr_env',
    expected: { ok: true, value: { apiKey: 'crsr_env', source: 'env' } },
  },
  {
    name: 'unresolved $CURSOR_API_KEY placeholder, env set',
    configured: '$CURSOR_API_KEY',
    envKey: 'crsr_env',
    expected: { ok: true, value: { apiKey: 'crsr_env', source: 'env' } },
  },
  {
    name: 'crsr_ key with an unresolved ${…} part is not concrete',
    configured: 'crsr_${SUFFIX}',
    envKey: 'crsr_env',
    expected: { ok: true, value: { apiKey: 'crsr_env', source: 'env' } },
  },
  {
    name: 'sk- key in config, crsr_ env',
    configured: 'sk-abc',
    envKey: 'crsr_env',
    expected: { ok: true, value: { apiKey: 'crsr_env', source: 'env' } },
  },
  {
    name: 'whitespace around keys is ignored',
    configured: '  crsr_conf\n',
    expected: { ok: true, value: { apiKey: 'crsr_conf', source: 'config' } },
  },
  {
    name: 'nothing set',
    configured: undefined,
    expected: { ok: false, error: { reason: 'not-found', message: notFound } },
  },
  {
    name: 'empty config key and empty env',
    configured: '',
    envKey: '',
    expected: { ok: false, error: { reason: 'not-found', message: notFound } },
  },
  {
    name: 'unresolved $CURSOR_API_KEY, env unset',
    configured: '$CURSOR_API_KEY',
    expected: { ok: false, error: { reason: 'not-found', message: notFound } },
  },
  {
    name: 'unresolved ${CURSOR_API_KEY}, env empty',
    configured: '${CURSOR_API_KEY}',
    envKey: '',
    expected: { ok: false, error: { reason: 'not-found', message: notFound } },
  },
  {
    name: 'sk- key in config, no env',
    configured: 'sk-abc',
    expected: {
      ok: false,
      error: {
        reason: 'wrong-prefix',
        message:
          'Wrong key prefix: Cursor dashboard keys start with crsr_, not sk-. ' +
          'Replace the key in Providers[].api_key with an API key from the Cursor dashboard (it starts with crsr_).',
      },
    },
  },
  {
    name: 'sk- key in env, no config key',
    configured: undefined,
    envKey: 'sk-ant-xyz',
    expected: {
      ok: false,
      error: {
        reason: 'wrong-prefix',
        message: /^Wrong key prefix: .*crsr_, not sk-\. Replace the key in CURSOR_API_KEY /,
      },
    },
  },
  {
    name: 'placeholder in config, sk- key in env',
    configured: '$CURSOR_API_KEY',
    envKey: 'sk-xyz',
    expected: {
      ok: false,
      error: {
        reason: 'wrong-prefix',
        message: /not sk-\. Replace the key in CURSOR_API_KEY with/,
      },
    },
  },
  {
    name: 'wrong keys in both places',
    configured: 'key_abc',
    envKey: 'sk-xyz',
    expected: {
      ok: false,
      error: {
        reason: 'wrong-prefix',
        message: /not sk-\. Replace the key in Providers\[\]\.api_key and CURSOR_API_KEY /,
      },
    },
  },
  {
    name: 'another prefix does not claim sk-',
    configured: 'key_abc',
    expected: {
      ok: false,
      error: {
        reason: 'wrong-prefix',
        message:
          /^Wrong key prefix: Cursor dashboard keys start with crsr_\. Replace the key in Providers\[\]\.api_key /,
      },
    },
  },
];

describe('resolveCursorApiKey', () => {
  it.each(cases)('$name', ({ configured, envKey, expected }) => {
    const result = resolveCursorApiKey(configured, envKey === undefined ? {} : { CURSOR_API_KEY: envKey });
    if (expected.ok || typeof expected.error.message === 'string') {
      expect(result).toEqual(expected);
      return;
    }
    expect(result).toMatchObject({ ok: false, error: { reason: expected.error.reason } });
    expect(result.ok ? '' : result.error.message).toMatch(expected.error.message);
  });

  it('never puts the key itself in a message', () => {
    for (const [configured, envKey] of [
      ['sk-secret-value-123', undefined],
      [undefined, 'sk-secret-value-123'],
      ['secret-value-123', 'sk-secret-value-123'],
    ] as const) {
      const result = resolveCursorApiKey(configured, envKey === undefined ? {} : { CURSOR_API_KEY: envKey });
      expect(result.ok).toBe(false);
      expect(JSON.stringify(result)).not.toContain('secret-value');
    }
  });
});
