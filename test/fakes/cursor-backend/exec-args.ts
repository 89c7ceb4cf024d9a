/**
 * Argument builders for {@link RunContext.exec}: what Cursor's server would put in an
 * `ExecServerMessage` for a built-in tool, in proto3 JSON.
 */

import type { JsonObject } from './client-message.js';

/**
 * `agent.v1.ShellArgs` the SDK will actually run. The SDK refuses a shell exec without the server's
 * `parsingResult` (`shellResult.spawnError "Parsing result is required"`), so one is built by splitting
 * `command` on spaces: keep to plain words (no quotes, pipes or redirects). With `workingDirectory`
 * empty, SDK 1.0.32 runs the command in its process's cwd, not in the agent's `local.cwd`.
 */
export const fakeShellArgs = (
  command: string,
  options: { toolCallId?: string; workingDirectory?: string } = {},
): JsonObject => {
  const [name = '', ...args] = command.split(' ').filter((word) => word !== '');
  return {
    command,
    ...(options.workingDirectory === undefined ? {} : { workingDirectory: options.workingDirectory }),
    ...(options.toolCallId === undefined ? {} : { toolCallId: options.toolCallId }),
    parsingResult: {
      executableCommands: [{ name, args: args.map((value) => ({ type: 'word', value })), fullText: command }],
    },
  };
};
