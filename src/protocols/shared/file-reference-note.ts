import { clipText } from '../../../lib/clip-text.js';
import type { TurnTextPart } from '../../turn/turn-request.js';

/**
 * What the model reads in place of an image the client referenced by a file id (Anthropic's `file` source,
 * the Responses API's `file_id`): the bridge has no Files API, so the id names nothing it can read.
 */
export const fileReferenceNote = (fileId: string): TurnTextPart => ({
  type: 'text',
  text:
    `[An image was attached here but is not shown to you: it was given by file id "${clipText(fileId, 80)}", ` +
    'and this bridge has no Files API to read it from. Ask the user to attach the image itself if you need it.]',
});
