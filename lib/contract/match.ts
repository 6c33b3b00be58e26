// Finds a request's row the way Express routes: path-to-regexp matchers, case-insensitive, optional trailing slash.
import { parse, pathToRegexp } from 'path-to-regexp';

interface Candidate<T> {
  readonly order: number;
  readonly regexp: RegExp;
  readonly value: T;
}

/** Rows of whole-segment paths with parameters at `isParam`, by their path spelled lower case with PARAM. */
interface Shape<T> {
  readonly isParam: readonly boolean[];
  readonly rows: Map<string, Candidate<T>>;
}

interface MethodIndex<T> {
  readonly exact: Map<string, Candidate<T>>;
  /** By number of segments. */
  readonly shapes: Shape<T>[][];
  /** Paths with optional groups, wildcards or parameters inside a segment: tested one by one. */
  readonly others: Candidate<T>[];
}

/** Marks a parameter segment; no request path contains it, since a URL cannot carry a NUL byte. */
const PARAM = '\0';
const SPELLED_PARAM = `/${PARAM}`;

/** A path's matcher as Express 4 and 5 route by default; throws path-to-regexp's error for a bad path. */
export function compilePath(path: string): RegExp {
  return pathToRegexp(path, { sensitive: false, trailing: true, end: true }).regexp;
}

function simpleSegments(path: string): string[] | undefined {
  let spelled = '';
  for (const token of parse(path).tokens) {
    if (token.type === 'text') spelled += token.value;
    else if (token.type === 'param') spelled += PARAM;
    else return undefined;
  }
  if (!spelled.startsWith('/')) return undefined;
  const segments = spelled.slice(1).toLowerCase().split('/');
  const simple = segments.every((s) => s !== '' && (s === PARAM || !s.includes(PARAM)));
  return simple ? segments : undefined;
}

function indexRoute<T>(index: MethodIndex<T>, candidate: Candidate<T>, path: string): void {
  const segments = simpleSegments(path);
  if (!segments) {
    index.others.push(candidate);
    return;
  }
  const spelled = `/${segments.join('/')}`;
  const isParam = segments.map((s) => s === PARAM);
  if (!isParam.includes(true)) {
    index.exact.set(spelled, candidate);
    return;
  }
  const shapes = (index.shapes[segments.length] ??= []);
  let shape = shapes.find((s) => s.isParam.join() === isParam.join());
  if (!shape) {
    shape = { isParam, rows: new Map() };
    shapes.push(shape);
  }
  shape.rows.set(spelled, candidate);
}

/** A path spelled as its shape's rows are, by slices: `split('/')` costs more than the rest of the lookup. */
function spelled(lower: string, isParam: readonly boolean[]): string {
  let key = '';
  let text = 0; // where the text since the last parameter starts
  let at = 0; // the slash that starts the current segment
  for (const param of isParam) {
    const next = lower.indexOf('/', at + 1);
    const end = next < 0 ? lower.length : next;
    if (param) {
      key += `${lower.slice(text, at)}${SPELLED_PARAM}`;
      text = end;
    }
    at = end;
  }
  return key + lower.slice(text);
}

// One lookup that tests only the rows that could match; the first in table order wins, and HEAD finds GET rows, as
// Express serves it.
export function compileMatcher<T>(
  routes: readonly { readonly method: string; readonly path: string; readonly value: T }[],
): (method: string, path: string) => T | undefined {
  const byMethod = new Map<string, MethodIndex<T>>();
  routes.forEach(({ method, path, value }, order) => {
    const index = byMethod.get(method) ?? { exact: new Map(), shapes: [], others: [] };
    byMethod.set(method, index);
    indexRoute(index, { order, regexp: compilePath(path), value }, path);
  });

  return (method, path) => {
    const index = byMethod.get(method === 'HEAD' ? 'GET' : method);
    if (!index || path.charCodeAt(0) !== 47 /* / */) return undefined;
    const trimmed = path.length > 1 && path.charCodeAt(path.length - 1) === 47 ? path.slice(0, -1) : path;
    const lower = trimmed.toLowerCase();
    let best = index.exact.get(lower);
    if (best && !best.regexp.test(path)) best = undefined;
    if (index.shapes.length > 0) {
      let slashes = 0;
      for (let i = 0; i < lower.length; i++) if (lower.charCodeAt(i) === 47 /* / */) slashes++;
      for (const shape of index.shapes[slashes] ?? []) {
        const candidate = shape.rows.get(spelled(lower, shape.isParam));
        if (candidate && (!best || candidate.order < best.order) && candidate.regexp.test(path)) best = candidate;
      }
    }
    for (const candidate of index.others) {
      if ((!best || candidate.order < best.order) && candidate.regexp.test(path)) best = candidate;
    }
    return best?.value;
  };
}
