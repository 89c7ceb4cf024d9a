/**
 * The console page's files: the page itself (`console/` in the package) and the three libraries it runs
 * on, served from the package's own dependencies (Preact, htm, uPlot). Nothing is fetched from the
 * network: the page works offline, and what it runs is what the package installed. Read once, on the
 * first request that asks for them, and kept in memory (a few hundred kilobytes); nothing is read while
 * nobody opens the console.
 */

import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { findShippedDir } from '../../../lib/find-shipped-dir.js';

export type ConsoleAsset = { body: Buffer; contentType: string };

const require = createRequire(import.meta.url);

/** The `console/` directory shipped with the package. */
const resolvePageDir = (): string => findShippedDir(import.meta.url, 'console', 'index.html');

const types: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.png': 'image/png',
  '.svg': 'image/svg+xml',
};

const typeOf = (path: string): string =>
  types[/\.[a-z]+$/.exec(path)?.[0] ?? ''] ?? 'application/octet-stream';

/**
 * Where each served name comes from: the page's files by name, the libraries from their packages (the
 * page's import map names them under `vendor/`).
 */
const sources = (): Map<string, string> => {
  const pageDir = resolvePageDir();
  const packageFile = (specifier: string): string => require.resolve(specifier);
  return new Map([
    ['index.html', join(pageDir, 'index.html')],
    ['console.js', join(pageDir, 'console.js')],
    ['console-api.js', join(pageDir, 'console-api.js')],
    ['console-format.js', join(pageDir, 'console-format.js')],
    ['template-editor.js', join(pageDir, 'template-editor.js')],
    ['console.css', join(pageDir, 'console.css')],
    ['vendor/preact.mjs', packageFile('preact')],
    ['vendor/preact-hooks.mjs', packageFile('preact/hooks')],
    ['vendor/htm.mjs', join(dirname(packageFile('htm')), 'htm.mjs')],
    ['vendor/uPlot.esm.js', join(dirname(packageFile('uplot')), 'uPlot.esm.js')],
    ['vendor/uPlot.min.css', join(dirname(packageFile('uplot')), 'uPlot.min.css')],
  ]);
};

const hooksName = 'vendor/preact-hooks.mjs';

/**
 * Preact's hooks import `preact` by its bare name, which a browser resolves only through an import map —
 * an inline script the page's content security policy does not allow. The served copy imports its
 * sibling file instead.
 */
const linkHooks = (body: Buffer): Buffer => {
  const text = body.toString('utf8');
  const linked = text.replace(/from\s*(["'])preact\1/g, 'from"./preact.mjs"');
  if (linked === text) throw new Error(`${hooksName}: no import of "preact" to link (a new Preact layout?)`);
  return Buffer.from(linked, 'utf8');
};

/** The console's static files, read on first use. */
export class ConsoleAssets {
  #files: Promise<Map<string, ConsoleAsset>> | undefined;
  #version: Promise<string> | undefined;

  /** The package's version (its package.json beside `console/`). */
  version(): Promise<string> {
    this.#version ??= readFile(join(dirname(resolvePageDir()), 'package.json'), 'utf8').then(
      (text) => String((JSON.parse(text) as { version?: unknown }).version ?? 'unknown'),
      () => 'unknown',
    );
    return this.#version;
  }

  /** The file served as `name` (a path under `/console/`), or undefined when there is none. */
  async get(name: string): Promise<ConsoleAsset | undefined> {
    this.#files ??= this.#load();
    return (await this.#files).get(name);
  }

  async #load(): Promise<Map<string, ConsoleAsset>> {
    const entries = await Promise.all(
      [...sources()].map(async ([name, path]) => {
        const body = await readFile(path);
        return [
          name,
          { body: name === hooksName ? linkHooks(body) : body, contentType: typeOf(path) },
        ] as const;
      }),
    );
    return new Map(entries);
  }
}
