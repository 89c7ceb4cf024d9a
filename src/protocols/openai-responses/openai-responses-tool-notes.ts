import type { TurnWarning } from '../../turn/turn-request.js';

/**
 * The notes that keep a dropped tool from being a silent drop: the model reads one in its prompt, the user
 * sees one at the top of a conversation's first answer. Both list the `unsupported-tool` warnings of the
 * request, whose messages name each tool and why it cannot be offered.
 */

/** Every user note starts with this; a note that comes back in the history is recognised by it. */
const userNotePrefix = '[cursor-bridge] ';

const toolWarnings = (warnings: readonly TurnWarning[]): string[] =>
  warnings.flatMap((warning) => (warning.code === 'unsupported-tool' ? [`- ${warning.message}`] : []));

/** The system-prompt note for the model, or undefined when every tool the client offered is mirrored. */
export const createUnavailableToolsModelNote = (warnings: readonly TurnWarning[]): string | undefined => {
  const lines = toolWarnings(warnings);
  if (lines.length === 0) return undefined;
  return [
    'Note from cursor-bridge (the gateway between the client and you, not the client itself): the client ' +
      'also offered these tools, which cannot run through the bridge and are not in your tool list:',
    ...lines,
    'Do not try to call them. If the task needs one, say so to the user.',
  ].join('\n');
};

/** The note shown to the user, or undefined when every tool the client offered is mirrored. */
export const createUnavailableToolsUserNote = (warnings: readonly TurnWarning[]): string | undefined => {
  const lines = toolWarnings(warnings);
  if (lines.length === 0) return undefined;
  return [
    `${userNotePrefix}Some tools your client offered are not available through this bridge (the model was told):`,
    ...lines,
  ].join('\n');
};

/** True for the text of a user note this bridge sent earlier (the client resends it as assistant text). */
export const isUnavailableToolsUserNote = (text: string): boolean => text.startsWith(userNotePrefix);
