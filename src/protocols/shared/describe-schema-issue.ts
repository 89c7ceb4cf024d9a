import type { z } from 'zod';

/** A schema failure reduced to the field at fault (dot path, `''` for the value itself) and a reason. */
export type SchemaIssue = { path: string; message: string };

/**
 * How a failed `z.union` is explained. Each adapter keeps the style its 400 answers have always had
 * (the `param` and message are wire output):
 * - `as-reported`: zod's own issue (its message, or the union's custom `error`) at the union's path;
 * - `deepest-alternative`: the alternative that got furthest into the value, or, when every alternative
 *   failed at the value itself, `Invalid input: expected string or array`;
 * - `list-alternatives`: the union's path, with the first message of every alternative joined by `; or `.
 */
export type UnionIssueStyle = 'as-reported' | 'deepest-alternative' | 'list-alternatives';

type Issue = z.core.$ZodIssue;
type ResolvedIssue = { path: readonly PropertyKey[]; message: string };

const resolveDeepestAlternative = (issue: Issue): ResolvedIssue => {
  if (issue.code !== 'invalid_union' || issue.errors.length === 0) {
    return { path: issue.path, message: issue.message };
  }
  const options = issue.errors.flatMap((errors) => (errors[0] ? [resolveDeepestAlternative(errors[0])] : []));
  const deepest = options.reduce<ResolvedIssue | undefined>(
    (best, option) => (best === undefined || option.path.length > best.path.length ? option : best),
    undefined,
  );
  if (deepest !== undefined && deepest.path.length > 0) {
    return { path: [...issue.path, ...deepest.path], message: deepest.message };
  }
  const expected = issue.errors.flatMap((errors) =>
    errors.flatMap((nested) =>
      'expected' in nested && typeof nested.expected === 'string' ? [nested.expected] : [],
    ),
  );
  const message =
    expected.length > 0 ? `Invalid input: expected ${[...new Set(expected)].join(' or ')}` : issue.message;
  return { path: issue.path, message };
};

const listAlternatives = (issue: Issue): ResolvedIssue => {
  if (issue.code !== 'invalid_union') return { path: issue.path, message: issue.message };
  const alternatives = issue.errors.flatMap((errors) => errors.slice(0, 1).map((error) => error.message));
  const message = alternatives.length === 0 ? issue.message : [...new Set(alternatives)].join('; or ');
  return { path: issue.path, message };
};

const resolveIssue = (issue: Issue, unions: UnionIssueStyle): ResolvedIssue => {
  switch (unions) {
    case 'as-reported':
      return { path: issue.path, message: issue.message };
    case 'deepest-alternative':
      return resolveDeepestAlternative(issue);
    case 'list-alternatives':
      return listAlternatives(issue);
    default: {
      const _exhaustive: never = unions;
      return _exhaustive;
    }
  }
};

/**
 * The first issue of a failed parse as a field path below `basePath` and a readable reason; failed
 * unions are explained in the given {@link UnionIssueStyle}.
 */
export const describeSchemaIssue = (
  error: z.ZodError,
  basePath: readonly PropertyKey[] = [],
  unions: UnionIssueStyle = 'as-reported',
): SchemaIssue => {
  const first = error.issues[0];
  if (first === undefined) return { path: basePath.map(String).join('.'), message: 'Invalid input' };
  const { path, message } = resolveIssue(first, unions);
  return { path: [...basePath, ...path].map(String).join('.'), message };
};
