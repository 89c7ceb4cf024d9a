import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository (package) root. */
export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
