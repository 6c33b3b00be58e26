// Calls of the app's observers (onLimit, onBan, onChange): their failures never change an answer or crash the process.
import type { Request } from 'express';
import { ListingLimitsWarning, type ListingLimitsWarningCode } from './errors.js';

export type OnError = (error: unknown, req: Request | undefined) => void;

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return value !== null && typeof value === 'object' && typeof (value as PromiseLike<unknown>).then === 'function';
}

/** Where observers' errors go: `onError`, else (or when it fails itself) a process warning. */
export function reporter(onError: OnError | undefined): OnError {
  const warn = (error: unknown) => {
    const text = error instanceof Error ? error.message : String(error);
    process.emitWarning(`listing-limits: a hook failed: ${text}`, { code: 'LISTING_LIMITS_HOOK_ERROR' });
  };
  return onError ? (error, req) => observe(onError, error, req, warn) : warn;
}

export type Warn = (code: ListingLimitsWarningCode, message: string) => void;

/** Tells a setup mistake as a process warning, and to `onError` as a {@link ListingLimitsWarning}. */
export function warner(onError: OnError | undefined): Warn {
  const tell = onError && reporter(onError);
  return (code, message) => {
    process.emitWarning(message, { code });
    tell?.(new ListingLimitsWarning(code, message), undefined);
  };
}

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
