// The Node version rule, shared by every entry point that starts before the TypeScript build loads
// (bin/cursor-bridge.js, the example tool host, the CCR transformer, the CCR 3 plugin): CommonJS in syntax
// every Node parses, so an old Node gets one clear line instead of a syntax error or a crash. The number
// itself lives in one place, package.json `engines.node` (">=X.Y.Z"): the floor undici's engine sets
// (@cursor/sdk alone needs 22.13: N-API 10 for its tree-sitter binding, node:sqlite for its store; Node 20
// segfaults).
'use strict';

var fs = require('fs');
var path = require('path');
var process = require('process');

var packageRoot = path.join(__dirname, '..');

/** [major, minor, patch] from package.json `engines.node`, which must read ">=X.Y.Z". */
function minimumNodeVersion() {
  var manifest = JSON.parse(fs.readFileSync(path.join(packageRoot, 'package.json'), 'utf8'));
  var range = manifest.engines && manifest.engines.node;
  var match = /^>=\s*(\d+)\.(\d+)\.(\d+)$/.exec(String(range));
  if (match === null)
    throw new Error('package.json engines.node must read ">=X.Y.Z", not ' + JSON.stringify(range));
  return [Number(match[1]), Number(match[2]), Number(match[3])];
}

/** True when `version` ("22.19.0" or "v22.19.0") is at least `minimum` ([major, minor, patch]). */
function meetsMinimum(version, minimum) {
  var parts = String(version).replace(/^v/, '').split('.').map(Number);
  for (var index = 0; index < 3; index += 1) {
    var part = parts[index] || 0;
    if (part !== minimum[index]) return part > minimum[index];
  }
  return true;
}

/**
 * How this copy of cursor-bridge was installed: "checkout" for a source checkout (its TypeScript sources are
 * present and it is not inside a node_modules directory; `npm` scripts there run on the Node 22 pinned in
 * devDependencies), else "package" (installed from npm: the sources are not shipped).
 */
function installKind(root) {
  var dir = root === undefined ? packageRoot : root;
  var inNodeModules = dir.split(path.sep).indexOf('node_modules') !== -1;
  return !inNodeModules && fs.existsSync(path.join(dir, 'src')) ? 'checkout' : 'package';
}

/**
 * What to do about an old Node, for the entry point that found it and how the package was installed.
 * Entries: "cli" (bin/cursor-bridge.js), "example" (examples/*.mjs), "ccr" (the CCR 1/2 transformer, which
 * runs inside CCR's process), "ccr3" (the CCR 3 plugin, idem).
 */
function advice(entry, kind, needed) {
  if (entry === 'ccr')
    return (
      'run Claude Code Router with Node ' +
      needed +
      ' or newer (the node that runs `ccr start`); Cursor requests fail until then.'
    );
  if (entry === 'ccr3')
    return (
      'run Claude Code Router 3 with Node ' +
      needed +
      ' or newer (`ccr stop`, then `ccr start` on that node); the plugin stays disabled until then.'
    );
  var command =
    entry === 'example'
      ? 'npx cursor-bridge example mcp-tool-host'
      : 'npm start, npx cursor-bridge <command>';
  if (kind === 'checkout')
    return (
      'in this source checkout run it through npm (' +
      command +
      '), which uses the Node 22 pinned in devDependencies, or install Node ' +
      needed +
      ' or newer.'
    );
  return (
    'install Node ' +
    needed +
    ' or newer and run cursor-bridge with it (with nvm: `nvm install 22`, then `npm install -g cursor-bridge` again on that Node).'
  );
}

/**
 * null when `version` (default: this process's) meets the minimum; otherwise the one line every entry point
 * prints or throws: the version needed, the version found, and what to do for this entry and install kind.
 */
function nodeVersionProblem(entry, version) {
  var found = String(version === undefined ? process.versions.node : version).replace(/^v/, '');
  var minimum = minimumNodeVersion();
  if (meetsMinimum(found, minimum)) return null;
  var needed = minimum.join('.');
  return (
    'cursor-bridge needs Node.js >= ' +
    needed +
    ' but runs on v' +
    found +
    ': ' +
    advice(entry, installKind(), needed)
  );
}

/** For a command-line entry point: on an old Node, print the line on stderr and exit 2 (bad usage). */
function exitUnlessSupported(entry) {
  var problem = nodeVersionProblem(entry);
  if (problem === null) return;
  process.stderr.write(problem + '\n');
  process.exit(2);
}

module.exports = {
  minimumNodeVersion: minimumNodeVersion,
  meetsMinimum: meetsMinimum,
  installKind: installKind,
  nodeVersionProblem: nodeVersionProblem,
  exitUnlessSupported: exitUnlessSupported,
};
