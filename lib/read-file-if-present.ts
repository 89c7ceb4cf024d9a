/** Reading a file that may not be there: absence is an answer, any other failure is thrown. */

import { readFile } from 'node:fs/promises';

/** Whether a file system error says the path does not exist. */
export const isMissingFile = (error: unknown): boolean =>
  typeof error === 'object' && error !== null && 'code' in error && error.code === 'ENOENT';

/** The file's text, or null when there is no such file. */
export const readFileIfPresent = async (path: string): Promise<string | null> => {
  try {
    return await readFile(path, 'utf8');
  } catch (error) {
    if (isMissingFile(error)) return null;
    throw error;
  }
};
