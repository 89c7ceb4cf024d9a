/**
 * The ESM side of `ccr/cursor-sdk.cjs` (which imports this file with dynamic `import()` once the Node
 * version is known to be new enough for `@cursor/sdk`). Named exports only.
 */
export { CcrFacade, getCcrFacade, preloadCursorSdk } from './ccr-facade.js';
export type { CcrHost, CcrTransformResult } from './ccr-facade.js';
