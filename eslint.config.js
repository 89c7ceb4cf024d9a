import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/** Only the Cursor adapter talks to the SDK. */
const cursorSdkImports = {
  group: ['@cursor/sdk', '@cursor/sdk/*'],
  message: 'Only src/upstream/cursor/ imports @cursor/sdk.',
};

/**
 * The tool host's public entry points, the only `mcp/` modules `src/` imports: `index.js` (the per-session
 * tool host), `host.js` (the standalone tool host), `server-name.js` (the server name, without the MCP SDK).
 * Small helpers both use live in `lib/`.
 */
const mcpInternalImports = {
  group: ['**/mcp/**', '!**/mcp/index.js', '!**/mcp/host.js', '!**/mcp/server-name.js'],
  message:
    'src/ uses mcp/ only through its public entry points (mcp/index.js, mcp/host.js, mcp/server-name.js); shared helpers belong in lib/.',
};

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
    rules: { 'no-restricted-imports': ['error', { patterns: [cursorSdkImports, mcpInternalImports] }] },
  },
  {
    files: ['src/upstream/cursor/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [mcpInternalImports] }] },
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
    files: ['lib/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['**/src/**', '**/mcp/**'],
              message: 'lib/ is the neutral helper library of src/ and mcp/: it imports neither.',
            },
          ],
        },
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
