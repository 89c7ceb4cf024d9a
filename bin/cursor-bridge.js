#!/usr/bin/env node
// Entry point. Kept to syntax every Node version parses; the version rule is in node-version.cjs.
import module from 'module';
import { URL, fileURLToPath } from 'url';
import nodeVersion from './node-version.cjs';

nodeVersion.exitUnlessSupported('cli');
// Node's compile cache (V8 code cache on disk, keyed by each module's source), where Node recommends it:
// NODE_COMPILE_CACHE, else the OS temp directory; NODE_DISABLE_COMPILE_CACHE=1 turns it off. A start
// compiles the bridge and the SDK (megabytes of JavaScript), and so do the SDK's chunks loaded on the
// first request: from the second start on, both read compiled code instead. It never throws.
module.enableCompileCache();
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
