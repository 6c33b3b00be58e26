// Whether the browser tests can run here: the system's Chromium; and what a run without it says.
import { accessSync, constants } from 'node:fs';
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

/** The one line a run prints when the browser tests cannot run here, or undefined when they can. */
export function browserNotice(): string | undefined {
  if (!browserMissing) return undefined;
  return inCI
    ? `Browser tests FAIL: ${browserMissing}, and CI=true never skips them.`
    : `Browser tests skipped: ${browserMissing}.`;
}
