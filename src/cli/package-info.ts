import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The package root: the nearest ancestor holding cursor-bridge's package.json (works from src/ and dist/). */
export const findPackageRoot = async (from = dirname(fileURLToPath(import.meta.url))): Promise<string> => {
  for (let dir = from; ; dir = dirname(dir)) {
    try {
      const manifest = JSON.parse(await readFile(join(dir, 'package.json'), 'utf8')) as { name?: unknown };
      if (manifest.name === 'cursor-bridge') return dir;
    } catch {
      // not here; keep walking up
    }
    if (dirname(dir) === dir) throw new Error('cannot find the cursor-bridge package root');
  }
};

export const packageVersion = async (): Promise<string> => {
  const root = await findPackageRoot();
  const manifest = JSON.parse(await readFile(join(root, 'package.json'), 'utf8')) as { version?: unknown };
  return typeof manifest.version === 'string' ? manifest.version : '0.0.0';
};
