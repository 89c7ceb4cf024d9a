import type { TurnTextPart } from '../../turn/turn-request.js';

/**
 * Message or tool-result content in the shape all three protocols share, `string | part[]`: a string is one
 * text part, kept even when empty (an empty tool output is still an answer); each part goes through
 * `convertPart`, which returns `undefined` for a part it dropped (after recording a warning). Order is kept.
 */
export const convertTextOrParts = <Part, Result>(
  content: string | readonly Part[],
  convertPart: (part: Part, index: number) => Result | undefined,
): Array<TurnTextPart | Result> =>
  typeof content === 'string'
    ? [{ type: 'text', text: content }]
    : content.flatMap((part, index) => {
        const converted = convertPart(part, index);
        return converted === undefined ? [] : [converted];
      });
