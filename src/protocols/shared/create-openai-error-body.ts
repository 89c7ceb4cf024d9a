import type { TurnError } from '../../turn/turn-error.js';

/** The OpenAI API error envelope, shared by Chat Completions and Responses HTTP error answers. */
export type OpenaiErrorBody = {
  error: { message: string; type: string; param: string | null; code: string | null };
};

/**
 * `{ error: { message, type, param, code } }` for a TurnError; `type` and `code` come from the protocol's
 * own table for the error kind, `param` from the error (`null` when no field is at fault).
 */
export const createOpenaiErrorBody = (
  error: TurnError,
  shape: { type: string; code: string | null },
): OpenaiErrorBody => ({
  error: { message: error.message, type: shape.type, param: error.param ?? null, code: shape.code },
});
