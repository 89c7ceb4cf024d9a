import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'coverage/**', 'test/.cache/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    // The Node version rule, loaded by the entry points before anything else: CommonJS any Node parses.
    files: ['bin/**/*.cjs'],
    languageOptions: {
      sourceType: 'commonjs',
      globals: { require: 'readonly', module: 'writable', __dirname: 'readonly' },
    },
    rules: { 'no-var': 'off', '@typescript-eslint/no-require-imports': 'off' },
  },
  {
    files: ['**/*.ts'],
    rules: {
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-console': 'error',
    },
  },
  {
    files: ['src/**/*.ts'],
    ignores: ['src/upstream/cursor/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['@cursor/sdk', '@cursor/sdk/*'],
              message: 'Only src/upstream/cursor/ imports @cursor/sdk.',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['mcp/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [{ group: ['**/src/**'], message: 'mcp/ is self-contained and never imports src/.' }] },
      ],
    },
  },
  {
    files: ['bin/**/*.js'],
    languageOptions: { globals: { process: 'readonly', console: 'readonly' } },
  },
  {
    // The CCR 3 plugin entry: ESM that CCR imports.
    files: ['ccr/**/*.mjs'],
    languageOptions: { globals: { process: 'readonly' } },
  },
  {
    files: ['ccr/**/*.cjs'],
    languageOptions: {
      sourceType: 'commonjs',
      globals: {
        require: 'readonly',
        module: 'writable',
        __dirname: 'readonly',
        process: 'readonly',
        URL: 'readonly',
      },
    },
    rules: { 'no-var': 'off', '@typescript-eslint/no-require-imports': 'off' },
  },
  {
    files: ['src/cli/**/*.ts', 'test/**/*.ts', 'bench/**/*.ts', 'bin/**/*.js'],
    rules: { 'no-console': 'off' },
  },
);
