#!/usr/bin/env node
// Entry point. Kept to syntax every Node version parses; the version rule is in node-version.cjs.
import { URL, fileURLToPath } from 'url';
import nodeVersion from './node-version.cjs';

nodeVersion.exitUnlessSupported('cli');
const build = new URL('../dist/src/cli/main.js', import.meta.url);
const buildPath = fileURLToPath(build);
let cli;
try {
  cli = await import(build.href);
} catch (error) {
  if (!error || error.code !== 'ERR_MODULE_NOT_FOUND' || !String(error.message).includes(buildPath))
    throw error;
  // A source checkout before its build: `npm install` builds (prepare), `npm run build` rebuilds.
  process.stderr.write(
    `cursor-bridge: the build is missing (${buildPath}); run \`npm install\` or \`npm run build\` in this checkout.\n`,
  );
  process.exit(2);
}
process.exitCode = await cli.main(process.argv.slice(2));
