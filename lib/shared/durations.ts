// The bounds on durations (windows, bans, blocks) that every part of the package agrees on.

/** The longest window, ban or block the package accepts: one year, in milliseconds. */
export const MAX_DURATION_MS = 365 * 24 * 3600 * 1000;
