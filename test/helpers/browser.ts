/**
 * A real browser for the console's tests: Debian's `chromium` (`.ci/run` installs it when missing), driven
 * by playwright-core. It reaches nothing but loopback: every host name but 127.0.0.1 fails to resolve, and
 * anything else goes to a proxy that does not exist. Screenshots go to `test/.cache/screenshots/` (git-ignored)
 * for a person to open.
 */

import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { repoRoot } from './repo-root.js';

/** Where the browser tests write their screenshots. */
export const screenshotDir = join(repoRoot, 'test', '.cache', 'screenshots');

const candidates = ['/usr/bin/chromium', '/usr/bin/chromium-browser'];

/** Debian's Chromium, or `$CHROMIUM_PATH`; throws naming the install command when there is none. */
export const chromiumPath = (): string => {
  const configured = process.env['CHROMIUM_PATH'];
  const found = configured !== undefined && configured !== '' ? configured : candidates.find(existsSync);
  if (found === undefined || !existsSync(found))
    throw new Error(
      'the console tests need Chromium: `apt-get install -y chromium` (Debian), or set CHROMIUM_PATH; .ci/run installs it',
    );
  return found;
};

export const launchBrowser = (): Promise<Browser> =>
  chromium.launch({
    executablePath: chromiumPath(),
    headless: true,
    args: [
      // Tests run as root here, where Chromium's own sandbox cannot start.
      '--no-sandbox',
      '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1',
      '--proxy-server=http://127.0.0.1:9',
      '--proxy-bypass-list=127.0.0.1',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
    ],
  });

/** Writes the page's screenshot as `<name>.png`; returns its path. */
export const screenshot = async (page: Page, name: string): Promise<string> => {
  await mkdir(screenshotDir, { recursive: true });
  const path = join(screenshotDir, `${name}.png`);
  await page.screenshot({ path, fullPage: true });
  return path;
};
