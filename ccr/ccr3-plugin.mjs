/*
 * cursor-bridge as a Claude Code Router 3 plugin: the file CCR 3 imports (`import('cursor-bridge/ccr3')`'s
 * absolute path as `plugins[].module`). `cursor-bridge ccr install` writes the entry:
 *
 *   { "id": "cursor-bridge", "enabled": true, "module": "<this file>",
 *     "surfaces": { "gateway": true, "apps": false, "provider": false },
 *     "permissions": ["trusted-code", "http-backends"],
 *     "config": { "port": 3460, "apiKey": "<the provider's api_key>", "models": ["composer-2"] } }
 *
 * CCR imports this file afresh (`?v=`) on every gateway restart; it holds no state. The implementation and
 * its engine registry live in `dist/src/hosts/ccr/`, which that re-import does not re-evaluate.
 */
import { createRequire } from 'node:module';
import { homedir } from 'node:os';

const require = createRequire(import.meta.url);
const nodeVersion = require('../bin/node-version.cjs');

const problem = nodeVersion.nodeVersionProblem('ccr3');
// CCR disables a plugin whose import or setup throws, with this message in its log.
if (problem !== null) throw new Error(problem);

const { getCcr3Plugin } = await import('../dist/src/hosts/ccr/ccr3-plugin.js');
const plugin = getCcr3Plugin({ env: process.env, homedir: homedir() });

export const setup = (context) => plugin.setup(context);
export const stop = (options) => plugin.stop(options);
export default { setup, stop };
