/**
 * The `/v1/models` catalog of the fake backend, shaped like `ModelListItem` of `@cursor/sdk`
 * (`{ id, displayName, description?, aliases?, parameters?, variants? }`). Parameter ids and values
 * imitate Cursor's (boolean flags as `"true"`/`"false"` strings); the real catalog is not verified.
 */

/** One `/v1/models` item (structurally the SDK's `ModelListItem`). */
export type FakeModel = {
  id: string;
  displayName: string;
  description?: string;
  aliases?: string[];
  parameters?: Array<{
    id: string;
    displayName?: string;
    values: Array<{ value: string; displayName?: string }>;
  }>;
  variants?: Array<{
    params: Array<{ id: string; value: string }>;
    displayName: string;
    description?: string;
    isDefault?: boolean;
  }>;
};

const flag = (id: string, displayName: string): NonNullable<FakeModel['parameters']>[number] => ({
  id,
  displayName,
  values: [
    { value: 'false', displayName: 'Off' },
    { value: 'true', displayName: 'On' },
  ],
});

const opusEfforts = ['low', 'medium', 'high', 'max'] as const;
const gptReasoning = ['none', 'low', 'medium', 'high', 'extra-high'] as const;

/** A realistic default catalog: composer-2, claude-opus-4-8, claude-haiku-4-5 and gpt-5.4. */
export const DEFAULT_FAKE_MODELS: readonly FakeModel[] = [
  {
    id: 'composer-2',
    displayName: 'Composer 2',
    description: "Cursor's agentic coding model",
    aliases: ['composer'],
  },
  {
    id: 'claude-opus-4-8',
    displayName: 'Claude Opus 4.8',
    description: 'Anthropic Claude Opus 4.8',
    aliases: ['opus-4.8'],
    parameters: [
      flag('thinking', 'Thinking'),
      { id: 'effort', displayName: 'Effort', values: opusEfforts.map((value) => ({ value })) },
    ],
    variants: [
      {
        params: [{ id: 'thinking', value: 'false' }],
        displayName: 'Claude Opus 4.8',
      },
      ...opusEfforts.map((effort) => ({
        params: [
          { id: 'thinking', value: 'true' },
          { id: 'effort', value: effort },
        ],
        displayName: `Claude Opus 4.8 Thinking (${effort})`,
        ...(effort === 'high' ? { isDefault: true } : {}),
      })),
    ],
  },
  {
    id: 'claude-haiku-4-5',
    displayName: 'Claude Haiku 4.5',
    description: 'Anthropic Claude Haiku 4.5',
  },
  {
    id: 'gpt-5.4',
    displayName: 'GPT-5.4',
    description: 'OpenAI GPT-5.4',
    parameters: [
      { id: 'reasoning', displayName: 'Reasoning', values: gptReasoning.map((value) => ({ value })) },
      flag('fast', 'Fast'),
      {
        id: 'context',
        displayName: 'Context',
        values: [
          { value: '272k', displayName: '272K' },
          { value: '1m', displayName: '1M' },
        ],
      },
    ],
    variants: [
      ...gptReasoning.map((reasoning) => ({
        params: [
          { id: 'reasoning', value: reasoning },
          { id: 'fast', value: 'false' },
          { id: 'context', value: '272k' },
        ],
        displayName: `GPT-5.4 (${reasoning})`,
        ...(reasoning === 'medium' ? { isDefault: true } : {}),
      })),
      {
        params: [
          { id: 'reasoning', value: 'medium' },
          { id: 'fast', value: 'true' },
          { id: 'context', value: '272k' },
        ],
        displayName: 'GPT-5.4 Fast',
      },
      {
        params: [
          { id: 'reasoning', value: 'high' },
          { id: 'fast', value: 'false' },
          { id: 'context', value: '1m' },
        ],
        displayName: 'GPT-5.4 (high, 1M context)',
      },
    ],
  },
];
