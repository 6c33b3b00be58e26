// Calls of the app's observers (onLimit, onBan, onChange): their failures never change an answer or crash the process.
import type { Request } from 'express';
import { ListingLimitsWarning, type ListingLimitsWarningCode } from './errors.js';

export type OnError = (error: unknown, req: Request | undefined) => void;

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return value !== null && typeof value === 'object' && typeof (value as PromiseLike<unknown>).then === 'function';
}

/** Where the errors of observers go: `onError`, or a process warning (also for an `onError` that fails itself). */
export function reporter(onError: OnError | undefined): OnError {
  const warn = (error: unknown) => {
    const text = error instanceof Error ? error.message : String(error);
    process.emitWarning(`listing-limits: a hook failed: ${text}`, { code: 'LISTING_LIMITS_HOOK_ERROR' });
  };
  if (!onError) return warn;
  return (error, req) => {
    try {
      const result: unknown = onError(error, req);
      // An async onError: what it rejects with is warned of as a throw is, never an unhandled rejection.
      if (isThenable(result)) result.then(undefined, warn);
    } catch (failure) {
      warn(failure);
    }
  };
}

/** Tells of a mistake in how the middleware is set up: see {@link warner}. */
export type Warn = (code: ListingLimitsWarningCode, message: string) => void;

/**
 * How a mistake that leaves the limits not counting as configured is told: a process warning with its code, and, when
 * there is an `onError`, a {@link ListingLimitsWarning} of the same code (what `onError` throws is warned of).
 */
export function warner(onError: OnError | undefined): Warn {
  const tell = onError && reporter(onError);
  return (code, message) => {
    process.emitWarning(message, { code });
    tell?.(new ListingLimitsWarning(code, message), undefined);
  };
}

/** Runs an observer; what it throws or rejects with goes to `report`. */
export function observe<A, R extends Request | undefined>(
  hook: ((arg: A, req: R) => unknown) | undefined,
  arg: A,
  req: R,
  report: OnError,
): void {
  if (!hook) return;
  try {
    const result = hook(arg, req);
    if (isThenable(result)) result.then(undefined, (error: unknown) => report(error, req));
  } catch (error) {
    report(error, req);
  }
}
