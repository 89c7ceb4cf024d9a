/**
 * What a command's handler throws when the words it was given do not fit (`templates frobnicate`): `main`
 * reports it through the one usage-error path, `cursor-bridge: <message>` and that command's usage, exit 2.
 */
export class UsageError extends Error {
  override name = 'UsageError';
}
