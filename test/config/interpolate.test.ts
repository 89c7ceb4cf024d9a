import { describe, expect, it } from 'vitest';

import { containsPlaceholder, interpolateEnv, interpolateString } from '../../src/config/interpolate.js';

const env = { CURSOR_API_KEY: 'crsr_abc', PORT: '4000', EMPTY: '', 'lower.case': 'dotted', A1_B: 'x' };

describe('interpolateString', () => {
  it.each([
    ['$CURSOR_API_KEY', 'crsr_abc'],
    ['${CURSOR_API_KEY}', 'crsr_abc'],
    ['${lower.case}', 'dotted'],
    ['prefix-$A1_B-suffix', 'prefix-x-suffix'],
    ['${PORT}${PORT}', '40004000'],
    // bare $VAR accepts only upper-case, digits and _: the lower-case tail is not part of the name
    ['$PORTx', '4000x'],
    ['$lowercase', '$lowercase'],
    // unset or empty leaves the literal (CCR v1/v2 `process.env[name] || match`)
    ['$UNSET_VAR', '$UNSET_VAR'],
    ['${UNSET_VAR}', '${UNSET_VAR}'],
    ['$EMPTY', '$EMPTY'],
    ['${EMPTY}', '${EMPTY}'],
    ['no placeholders', 'no placeholders'],
    ['cost: $5', 'cost: $5'],
  ])('%s → %s', (input, expected) => {
    expect(interpolateString(input, env)).toBe(expected);
  });
});

describe('interpolateEnv', () => {
  it('replaces every string, recursively, and leaves keys and non-strings alone', () => {
    const input = {
      $CURSOR_API_KEY: 1,
      PORT: '$PORT',
      LOG: false,
      Providers: [{ api_key: '${CURSOR_API_KEY}', models: ['$A1_B', 3, null] }],
    };
    expect(interpolateEnv(input, env)).toEqual({
      $CURSOR_API_KEY: 1,
      PORT: '4000',
      LOG: false,
      Providers: [{ api_key: 'crsr_abc', models: ['x', 3, null] }],
    });
    expect(input.PORT).toBe('$PORT');
  });
});

describe('containsPlaceholder', () => {
  it.each([
    ['$CURSOR_API_KEY', true],
    ['${anything}', true],
    ['crsr_${SUFFIX}', true],
    ['crsr_abc', false],
    ['$lowercase', false],
    ['', false],
  ])('%s → %s', (text, expected) => {
    expect(containsPlaceholder(text)).toBe(expected);
  });
});
