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

/** The CLI sits on top: it reads argv and `process.env` and wires everything; nothing else imports it. */
const cliImports = {
  group: ['**/cli/**'],
  message: 'Only src/cli/ imports src/cli/: the CLI sits on top of everything else.',
};

/**
 * Dependencies run one way: the hosts (`src/hosts/`) and the composition root (`src/bridge/`) sit on the
 * inner layers, which never import them.
 */
const outerLayerImports = {
  group: ['**/hosts/**', '**/bridge/**'],
  message:
    'The inner layers (turn, protocols, engine, upstream, workspace, config, logging, metrics) never import src/hosts/ or src/bridge/.',
};
const innerLayers = [
  'turn',
  'protocols',
  'engine',
  'upstream',
  'workspace',
  'config',
  'logging',
  'metrics',
].map((layer) => `src/${layer}/**/*.ts`);

/** The hosts stand side by side over the one turn pipeline (`src/hosts/turn-pipeline.ts`): neither imports the other. */
const ccrHostImports = {
  regex: '(^|/)ccr/',
  message: 'src/hosts/http/ and the turn pipeline never import the CCR hosts (src/hosts/ccr/, ccr/).',
};
const httpHostImports = {
  regex: '(^|/)http/',
  message:
    'src/hosts/ccr/ and the turn pipeline never import the HTTP host (src/hosts/http/): the CCR 3 plugin reaches it through src/bridge/.',
};

const consoleHostImports = {
  regex: '(^|/)console/',
  message:
    'src/hosts/http/ and src/hosts/ccr/ never import the console (src/hosts/console/): src/bridge/ wires it.',
};

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'coverage/**', 'test/.cache/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    // The console page: browser modules, no build step.
    files: ['console/**/*.js'],
    languageOptions: {
      sourceType: 'module',
      globals: Object.fromEntries(
        ['window', 'document', 'location', 'fetch', 'EventSource', 'setTimeout', 'clearTimeout'].map(
          (name) => [name, 'readonly'],
        ),
      ),
    },
  },
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
  // One `no-restricted-imports` per file: a later block that matches a file replaces an earlier one's list.
  {
    files: ['src/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [cursorSdkImports, mcpInternalImports, cliImports] }],
    },
  },
  {
    files: innerLayers,
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [cursorSdkImports, mcpInternalImports, cliImports, outerLayerImports] },
      ],
    },
  },
  {
    files: ['src/upstream/cursor/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [mcpInternalImports, cliImports, outerLayerImports] }],
    },
  },
  {
    files: ['src/hosts/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [cursorSdkImports, mcpInternalImports, cliImports, ccrHostImports, httpHostImports] },
      ],
    },
  },
  {
    files: ['src/hosts/http/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [cursorSdkImports, mcpInternalImports, cliImports, ccrHostImports, consoleHostImports] },
      ],
    },
  },
  {
    files: ['src/hosts/ccr/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [cursorSdkImports, mcpInternalImports, cliImports, httpHostImports, consoleHostImports] },
      ],
    },
  },
  {
    files: ['src/hosts/console/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [cursorSdkImports, mcpInternalImports, cliImports, httpHostImports, ccrHostImports] },
      ],
    },
  },
  {
    files: ['src/cli/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [cursorSdkImports, mcpInternalImports] }] },
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
