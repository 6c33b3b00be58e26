// The system's Chromium (Debian's `chromium` package), driven by playwright-core: no browser is downloaded.
import { type Browser, chromium } from 'playwright-core';
import { browserMissing, CHROMIUM } from './browser-env';
import { inCI } from './redis-env';

/**
 * `describe` for tests in a real browser; `describe.skip` when Chromium is missing and this is not CI. Under CI they
 * always run, and fail in their set-up when it is missing.
 */
export const describeBrowser = browserMissing && !inCI ? describe.skip : describe;

/**
 * Chromium, headless, with nothing of its own on the network (no updates, sync or QUIC); Playwright gives each launch
 * a fresh temporary profile (`--user-data-dir`).
 */
export function launchChromium(): Promise<Browser> {
  if (browserMissing) throw new Error(`Cannot start the browser for the tests: ${browserMissing}.`);
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}
