#!/usr/bin/env node
// Entry point. Kept to syntax every Node version parses, so an old Node gets a clear message instead of
// a crash: @cursor/sdk needs Node >= 22.13 (its tree-sitter binding needs N-API 10; Node 20 segfaults
// at the first send) and its store needs node:sqlite.
const [major, minor] = process.versions.node.split('.').map(Number);
if (major < 22 || (major === 22 && minor < 13)) {
  process.stderr.write(
    'cursor-bridge needs Node.js >= 22.13 (22.19+ recommended); this is ' +
      process.version +
      '.\nRun it through npm (`npm start`), which uses the Node 22 pinned in devDependencies, or install Node 22.\n',
  );
  process.exit(2);
}
const { main } = await import('../dist/src/cli/main.js');
process.exitCode = await main(process.argv.slice(2));
