/**
 * The MCP SDK's Ajv validator, built on first use instead of with every `Client` / `Server`.
 *
 * Each MCP `Client` and `Server` builds its own Ajv instance with every format (`ajv-formats`) unless it
 * is given a validator: CPU and heap apiece, which outlive a short conversation's young generation and
 * end as old-space garbage. The bridge makes one server and one in-process client per
 * conversation and almost never validates with them (the client only checks a tool's `outputSchema`
 * after `tools/list`; the server only an elicitation form), so each gets this: the same validator,
 * built only if it is asked for. One per client or server, not one shared, because Ajv keeps every
 * schema it compiles for the life of the instance.
 */

import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import type { jsonSchemaValidator } from '@modelcontextprotocol/sdk/validation';

/**
 * A validator that calls `create` (default: the SDK's own {@link AjvJsonSchemaValidator}) on its first
 * `getValidator` and delegates every call to that one instance.
 */
export function createLazyJsonSchemaValidator(
  create: () => jsonSchemaValidator = () => new AjvJsonSchemaValidator(),
): jsonSchemaValidator {
  let validator: jsonSchemaValidator | undefined;
  return {
    getValidator: (schema) => (validator ??= create()).getValidator(schema),
  };
}
