import type { z } from 'zod';
import { describeSchemaIssue, type UnionIssueStyle } from './describe-schema-issue.js';
import { InvalidRequestFault } from './invalid-request-fault.js';

/** Where a value sits in the request body: a dot path (`messages.2.content`, `''` for the body) or its segments. */
export type RequestFieldPath = string | readonly (string | number)[];

/**
 * Validates one value of the request body; returns the parsed data or throws an
 * {@link InvalidRequestFault} naming the field at fault below `path`.
 */
export type RequestFieldReader = <T extends z.ZodType>(
  schema: T,
  value: unknown,
  path: RequestFieldPath,
) => z.infer<T>;

const toSegments = (path: RequestFieldPath): readonly PropertyKey[] =>
  typeof path === 'string' ? path.split('.').filter((segment) => segment !== '') : path;

/**
 * A {@link RequestFieldReader} for one adapter. Converters call it deep inside the body so a malformed
 * field becomes a 400 whose `param` is the exact path, with failed unions explained in `unions` style.
 */
export const createRequestFieldReader =
  (unions: UnionIssueStyle): RequestFieldReader =>
  (schema, value, path) => {
    const result = schema.safeParse(value);
    if (result.success) return result.data;
    const issue = describeSchemaIssue(result.error, toSegments(path), unions);
    throw InvalidRequestFault.atField(issue.path, issue.message);
  };
