#!/usr/bin/env node
// Entry point. Kept to syntax every Node version parses; the version rule is in node-version.cjs.
import nodeVersion from './node-version.cjs';

const minimum = nodeVersion.minimumNodeVersion();
if (!nodeVersion.meetsMinimum(process.versions.node, minimum)) {
  process.stderr.write(
    'cursor-bridge needs Node.js >= ' +
      minimum.join('.') +
      '; this is ' +
      process.version +
      '.\nRun it through npm (`npm start`), which uses the Node 22 pinned in devDependencies, or install Node ' +
      minimum.join('.') +
      ' or newer.\n',
  );
  process.exit(2);
}
const { main } = await import('../dist/src/cli/main.js');
process.exitCode = await main(process.argv.slice(2));
