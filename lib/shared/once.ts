// One-shot calls: a warning told at the first sign of a mistake, not at every request after it.

/** `fn` run at its first call only; later calls do nothing. */
export function once<A extends unknown[]>(fn: (...args: A) => void): (...args: A) => void {
  let done = false;
  return (...args) => {
    if (done) return;
    done = true;
    fn(...args);
  };
}
