import { describe, expect, it } from 'vitest';

import { planCcrInstall } from '../../src/hosts/ccr/install/ccr-install-plan.js';
import { applyModelList, createDefaultConfigText } from '../../src/cli/model-get.js';
import { parseConfigText } from '../../src/config/load-config.js';

const catalogIds = ['composer-2', 'claude-opus-4-8', 'gpt-5.4', 'grok-4.7'];

/** A config as CCR / `JSON.stringify(config, null, 2)` writes it. */
const strictJson = `{
  "LOG": true,
  "Providers": [
    {
      "name": "openrouter",
      "api_base_url": "https://openrouter.ai/api/v1/chat/completions",
      "api_key": "sk-or",
      "models": ["gpt-4o"]
    },
    {
      "name": "cursor",
      "api_base_url": "https://cursor.com",
      "api_key": "$CURSOR_API_KEY",
      "models": [
        "composer-2",
        "gpt-5.4"
      ],
      "transformer": {
        "use": [["cursor-sdk", { "cursorMode": "bridge" }]]
      }
    }
  ],
  "Router": {
    "default": "cursor,composer-2"
  }
}
`;

const applied = (text: string, ids: readonly string[] = catalogIds, providerName?: string) => {
  const result = applyModelList(text, ids, providerName === undefined ? {} : { providerName });
  if (!result.ok) throw new Error(result.error);
  return result;
};

describe('applyModelList', () => {
  it('appends missing ids to a multi-line models array, one per line, touching nothing else', () => {
    const result = applied(strictJson);
    expect(result.added).toEqual(['claude-opus-4-8', 'grok-4.7']);
    expect(result.providerName).toBe('cursor');
    expect(result.text).toBe(
      strictJson.replace(
        '"gpt-5.4"\n      ],',
        '"gpt-5.4",\n        "claude-opus-4-8",\n        "grok-4.7"\n      ],',
      ),
    );
    expect(JSON.parse(result.text)).toMatchObject({
      Providers: [
        { models: ['gpt-4o'] },
        { models: ['composer-2', 'gpt-5.4', 'claude-opus-4-8', 'grok-4.7'] },
      ],
    });
  });

  it('returns the text unchanged when nothing is missing, and is idempotent', () => {
    const once = applied(strictJson).text;
    const twice = applied(once);
    expect(twice.added).toEqual([]);
    expect(twice.text).toBe(once);
  });

  it('rewrites a single-line array multi-line with a 2-space indent', () => {
    const text = strictJson.replace('[\n        "composer-2",\n        "gpt-5.4"\n      ]', '["composer-2"]');
    expect(applied(text, ['composer-2', 'gpt-5.4']).text).toBe(
      text.replace('["composer-2"]', '[\n        "composer-2",\n        "gpt-5.4"\n      ]'),
    );
  });

  it('fills an empty array', () => {
    const text = '{"Providers": [{"name": "cursor", "models": []}]}';
    expect(applied(text, ['composer-2']).text).toBe(
      '{"Providers": [{"name": "cursor", "models": [\n  "composer-2"\n]}]}',
    );
  });

  it('adds a models key after the provider’s last key when it has none', () => {
    const text = `{
  "Providers": [
    {
      "name": "my-cursor",
      "transformer": { "use": ["cursor-sdk"] }
    }
  ]
}`;
    const result = applied(text, ['composer-2', 'gpt-5.4']);
    expect(result.providerName).toBe('my-cursor');
    expect(result.text).toBe(
      text.replace(
        '"use": ["cursor-sdk"] }\n',
        '"use": ["cursor-sdk"] },\n      "models": [\n        "composer-2",\n        "gpt-5.4"\n      ]\n',
      ),
    );
  });

  it('keeps JSON5 comments, quotes and trailing commas, and the CRLF line endings', () => {
    const text = [
      '// my router config',
      '{',
      '  Providers: [',
      '    {',
      "      name: 'cursor', // the bridge",
      '      models: [',
      "        'composer-2', // fast default",
      '      ],',
      '    },',
      '  ],',
      '}',
      '',
    ].join('\r\n');
    const result = applied(text, ['composer-2', 'gpt-5.4']);
    expect(result.text).toBe(text.replace("'composer-2',", '\'composer-2\',\r\n        "gpt-5.4",'));
    expect(parseConfigText(result.text, { path: 'c.json', env: {}, homedir: '/h' }).cursor.models).toEqual([
      'composer-2',
      'gpt-5.4',
    ]);
  });

  it('indents with tabs in a tab-indented file', () => {
    const text = '{\n\t"Providers": [{ "name": "cursor", "models": [] }]\n}';
    expect(applied(text, ['composer-2']).text).toBe(
      '{\n\t"Providers": [{ "name": "cursor", "models": [\n\t\t"composer-2"\n\t] }]\n}',
    );
  });

  it('finds the provider by cursor-sdk in transformer.use and dedupes catalog ids', () => {
    const text = '{"Providers": [{"name": "cx", "models": ["a"], "transformer": {"use": ["cursor-sdk"]}}]}';
    const result = applied(text, ['b', 'a', 'b']);
    expect(result.added).toEqual(['b']);
    expect(JSON.parse(result.text).Providers[0].models).toEqual(['a', 'b']);
  });

  it('targets the provider named on the command line', () => {
    const text =
      '{"Providers": [{"name": "cursor", "models": []}, {"name": "c2", "transformer": {"use": ["cursor-sdk"]}}]}';
    const result = applied(text, ['x'], 'c2');
    expect(result.providerName).toBe('c2');
    expect(JSON.parse(result.text).Providers).toEqual([
      { name: 'cursor', models: [] },
      { name: 'c2', transformer: { use: ['cursor-sdk'] }, models: ['x'] },
    ]);
  });

  it.each([
    [
      'no Providers',
      '{"Router": {}}',
      {},
      /^no Cursor provider in the config: add a provider named "cursor"/,
    ],
    [
      'no Cursor provider',
      '{"Providers": [{"name": "openrouter", "models": []}]}',
      {},
      /^no Cursor provider/,
    ],
    [
      'the named provider is not a Cursor provider',
      '{"Providers": [{"name": "openrouter"}]}',
      { providerName: 'openrouter' },
      /^provider "openrouter" is not a Cursor provider/,
    ],
    [
      'no provider by that name',
      '{"Providers": [{"name": "cursor"}]}',
      { providerName: 'x' },
      /^no provider named "x"/,
    ],
    [
      'models is not an array',
      '{"Providers": [{"name": "cursor", "models": "composer-2"}]}',
      {},
      /^Providers\[0\]\.models must be an array/,
    ],
    ['invalid JSON5', '{"Providers": [}', {}, /^the config is not valid JSON5 \(line 1, column 16\)/],
  ])('explains %s', (_label, text, options, error) => {
    const result = applyModelList(text, catalogIds, options);
    expect(result.ok).toBe(false);
    expect(result.ok ? '' : result.error).toMatch(error);
  });
});

describe('createDefaultConfigText', () => {
  it('writes a loadable config with the catalog ids, routed to composer-2', () => {
    const text = createDefaultConfigText(['gpt-5.4', 'composer-2']);
    const config = parseConfigText(text, {
      path: 'c.json',
      env: { CURSOR_API_KEY: 'crsr_k' },
      homedir: '/h',
    });
    expect(config.cursor).toMatchObject({
      providerName: 'cursor',
      models: ['gpt-5.4', 'composer-2'],
      apiKeyConfigured: 'crsr_k',
    });
    expect(config.router.default).toBe('cursor,composer-2');
    expect(text.endsWith('}\n')).toBe(true);
  });

  it("is the config `ccr install` writes, with the catalog's ids: ccr install then has nothing to change", () => {
    const text = createDefaultConfigText(['composer-2', 'gpt-5.4'], '/opt/cursor-bridge/dist/ccr.cjs');
    const config = JSON.parse(text) as {
      transformers: unknown;
      Providers: Array<{ api_base_url: string; models: string[] }>;
    };
    expect(config.transformers).toEqual([
      { path: '/opt/cursor-bridge/dist/ccr.cjs', options: { cursorMode: 'bridge' } },
    ]);
    // The placeholder that can never resolve: a route CCR cannot serve fails locally, the key goes nowhere.
    expect(config.Providers[0]?.api_base_url).toBe('https://cursor.invalid/v1/chat/completions');
    expect(config.Providers[0]?.models).toEqual(['composer-2', 'gpt-5.4']);
    const plan = planCcrInstall(text, '/opt/cursor-bridge/dist/ccr.cjs');
    expect(plan.ok && plan.changes).toEqual([]);
  });

  it('has no transformers entry without a transformer path (serve needs none)', () => {
    const text = createDefaultConfigText(['composer-2']);
    expect(JSON.parse(text)).not.toHaveProperty('transformers');
    const plan = planCcrInstall(text, '/opt/cursor-bridge/dist/ccr.cjs');
    expect(plan.ok && plan.changes).toEqual(['added transformers entry /opt/cursor-bridge/dist/ccr.cjs']);
  });

  it('routes to the first model when the catalog has no composer-2', () => {
    expect(JSON.parse(createDefaultConfigText(['gpt-5.4'])).Router.default).toBe('cursor,gpt-5.4');
  });
});
