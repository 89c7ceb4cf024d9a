// The Node version rule, shared by every entry point that starts before the TypeScript build loads
// (bin/cursor-bridge.js, the CCR transformer entry): CommonJS in syntax every Node parses, so an old Node
// gets a clear message instead of a syntax error or a crash. The number itself lives in one place,
// package.json `engines.node` (">=X.Y.Z"): 22.19.0 per the spec (undici's engine; @cursor/sdk alone
// needs 22.13: N-API 10 for its tree-sitter binding, node:sqlite for its store; Node 20 segfaults).
'use strict';

var fs = require('fs');
var path = require('path');

/** [major, minor, patch] from package.json `engines.node`, which must read ">=X.Y.Z". */
function minimumNodeVersion() {
  var manifest = JSON.parse(fs.readFileSync(path.join(__dirname, '..', 'package.json'), 'utf8'));
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

module.exports = { minimumNodeVersion: minimumNodeVersion, meetsMinimum: meetsMinimum };
