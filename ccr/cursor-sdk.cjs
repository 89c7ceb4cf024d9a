'use strict';
/*
 * The `cursor-sdk` transformer for Claude Code Router (CCR 1.0.73 / 2.0.0, @musistudio/llms 1.0.53).
 *
 * CCR loads it with `require(path)` and `new Module(options)` from `transformers: [{ "path", "options" }]`, so
 * this file is hand-written CommonJS kept to syntax every Node parses (no `?.`, `??`, class fields): on a Node
 * too old for `@cursor/sdk` it must still load and say so, instead of crashing CCR. The implementation is the
 * ESM build in `dist/src/hosts/ccr/`, loaded with dynamic `import()`: started in the background when CCR
 * constructs the transformer (with `@cursor/sdk`, the bulk of an engine's start), so that CCR's first request
 * does not wait for it; a failed load is reported by the first request, which loads again.
 *
 * Reference styles. llms registers the object `new Module(options)` returns under its `name`, then resolves
 * `"use": ["cursor-sdk"]` to that object — or, when it is a function, to `new fn()` — and
 * `"use": [["cursor-sdk", options]]` to `new registered(options)`, which throws "not a constructor" for a plain
 * object and silently drops the provider. So the constructor returns a constructible function that carries the
 * transformer members itself: `new` on it yields a transformer whose options are the registered ones merged
 * with the per-provider ones. Both styles therefore work on unmodified CCR.
 */

var os = require('os');
var path = require('path');
var url = require('url');
var nodeVersion = require('../bin/node-version.cjs');

var transformerName = 'cursor-sdk';
var implementationPath = path.join(__dirname, '..', 'dist', 'src', 'hosts', 'ccr', 'ccr-transformer.js');

/**
 * `null` when this Node meets the package's minimum (package.json `engines.node`, the number `bin/` checks
 * too), else the one line every entry point gives, with the advice for CCR.
 */
function nodeVersionProblem() {
  return nodeVersion.nodeVersionProblem('ccr');
}

var reportedProblem = false;
/** The version problem, written to stderr once per process (CCR's own logger may be off or absent). */
function checkNode() {
  var problem = nodeVersionProblem();
  if (problem !== null && !reportedProblem) {
    reportedProblem = true;
    process.stderr.write(problem + '\n');
  }
  return problem;
}

var implementation = null;
/** The ESM implementation, imported once per process (again after a failed import, e.g. before a build). */
function loadImplementation() {
  if (implementation === null) {
    implementation = import(url.pathToFileURL(implementationPath).href).catch(function (error) {
      implementation = null;
      var reason = error && error.message ? error.message : String(error);
      throw new Error(
        'cursor-sdk transformer: cannot load its implementation ' + implementationPath + ': ' + reason,
      );
    });
  }
  return implementation;
}

var preloading = false;
/** Starts loading the implementation and the SDK, once per process; failures are left to the first request. */
function preload() {
  if (preloading) return;
  preloading = true;
  loadImplementation()
    .then(function (module) {
      return module.preloadCursorSdk();
    })
    .catch(function () {});
}

function mergeOptions(base, extra) {
  var merged = {};
  var key;
  if (base && typeof base === 'object') for (key in base) merged[key] = base[key];
  if (extra && typeof extra === 'object') for (key in extra) merged[key] = extra[key];
  return merged;
}

/** The transformer proper: one per reference, all sharing the process's engine for equal options. */
function createTransformer(options) {
  var problem = checkNode();
  var transformer = {
    name: transformerName,
    options: options,
    transformRequestIn: function (request, provider, context) {
      if (problem !== null) {
        return Promise.reject(unsupportedNodeError(problem));
      }
      return loadImplementation().then(function (module) {
        var facade = module.getCcrFacade({ env: process.env, homedir: os.homedir() });
        return facade.transformRequestIn(options, request, provider, context);
      });
    },
  };
  return transformer;
}

/**
 * Without the ESM build (old Node): reject the request the way llms rejects any failed provider call, so CCR
 * answers with this status and message instead of a confusing fetch error.
 */
function unsupportedNodeError(message) {
  var error = new Error(message);
  error.statusCode = 500;
  error.code = 'unsupported_node';
  error.type = 'api_error';
  return error;
}

/**
 * `new CursorSdkTransformer(options)` returns a constructible function named `cursor-sdk` that also carries
 * `transformRequestIn` (so it works where it is used without `new`); `new` on that function returns a
 * transformer with the registered options merged with its own.
 */
module.exports = class CursorSdkTransformer {
  constructor(options) {
    if (checkNode() === null) preload();
    var registeredOptions = mergeOptions(options, null);
    var base = createTransformer(registeredOptions);
    var constructible = function CursorSdk(providerOptions) {
      return createTransformer(mergeOptions(registeredOptions, providerOptions));
    };
    Object.defineProperty(constructible, 'name', { value: transformerName, configurable: true });
    constructible.options = registeredOptions;
    constructible.transformRequestIn = base.transformRequestIn;
    return constructible;
  }

  static get TransformerName() {
    return transformerName;
  }
};
