/**
 * The JSON nesting limit, shared with the tool host: the one module in `src/` that reaches into `mcp/`
 * for it (`mcp/` is self-contained and cannot import `src/`, so the scanner lives there). See
 * `mcp/json-depth.ts` for the contract.
 */
export {
  describeDepthExcess,
  findJsonTextDepthExcess,
  findValueDepthExcess,
  MAX_JSON_DEPTH,
  type JsonDepthExcess,
} from '../../mcp/json-depth.js';
