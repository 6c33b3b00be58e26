// The system's Chromium (Debian's `chromium` package), driven by playwright-core: no browser is downloaded.
import { accessSync, constants } from 'node:fs';
import { type Browser, chromium } from 'playwright-core';
import { inCI } from './redis-env';

export const CHROMIUM = process.env.CHROMIUM_PATH || '/usr/bin/chromium';

function missing(): string | undefined {
  try {
    accessSync(CHROMIUM, constants.X_OK);
    return undefined;
  } catch {
    return `${CHROMIUM} is not there (apt-get install -y chromium)`;
  }
}

/** Why the browser tests cannot run here, or undefined. */
export const browserMissing = missing();

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
