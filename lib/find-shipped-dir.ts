/**
 * A directory the package ships beside its code (`workspace-templates/`, `console/`): found by walking up
 * from a module, so it is the same from the TypeScript sources and from the built `dist/`.
 */

import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The nearest ancestor's `name/` directory (of the module at `moduleUrl`) that holds `marker`; throws when
 * none does within a few levels (the package was installed without it).
 */
export const findShippedDir = (moduleUrl: string, name: string, marker: string): string => {
  let directory = dirname(fileURLToPath(moduleUrl));
  for (let depth = 0; depth < 8; depth += 1) {
    const candidate = join(directory, name);
    if (existsSync(join(candidate, marker))) return candidate;
    const parent = dirname(directory);
    if (parent === directory) break;
    directory = parent;
  }
  throw new Error(`${name}/ not found above ${fileURLToPath(moduleUrl)}`);
};
