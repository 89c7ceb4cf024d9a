/**
 * The ESM side of `ccr/cursor-sdk.cjs` (which imports this file with dynamic `import()` once the Node
 * version is known to be new enough for `@cursor/sdk`). Named exports only.
 */
export { CcrFacade, getCcrFacade } from './ccr-facade.js';
/**
 * The SDK's import, which `ccr/cursor-sdk.cjs` starts in the background when CCR constructs the transformer
 * (it ignores a failure: the first request, which imports again, reports it).
 */
export { importCursorSdk as preloadCursorSdk } from '../../upstream/cursor/cursor-upstream.js';
export type { CcrHost, CcrTransformResult } from './ccr-facade.js';
