// What the middleware knows of each request it took, and `req.rateLimit` read from it by one accessor.
import { IncomingMessage } from 'node:http';

/**
 * Where a request's entries are kept: on `res.locals`, which Express makes for every request as an object without a
 * prototype, so that a property added to it costs the request next to nothing (one added to `req`, whose prototype
 * Express sets, costs about 6% of a bare Express request). One symbol for every copy of the package.
 */
const ENTRY = Symbol.for('listing-limits.entry');

/** Marks the accessor's getter as this package's, whichever copy (ESM or CommonJS) defined it. */
const ACCESSOR = Symbol.for('listing-limits.rateLimit');

/** What an entry answers when it gives the request no `req.rateLimit`: the entry before it is asked. */
export const UNSET = Symbol.for('listing-limits.unset');

/**
 * What is known of a request, one entry per middleware that took it, the newest first, each linked to the one
 * before: which middleware took it, and its `req.rateLimit` once it is answered.
 */
export interface Entry {
  readonly prev: Entry | undefined;
  /** The middleware that took the request; undefined for an assignment to `req.rateLimit`. */
  readonly owner: unknown;
  /** The request's `req.rateLimit` as this entry gives it, or UNSET. */
  rateLimit(): unknown;
}

/** What the app assigned to `req.rateLimit` itself: it holds until a middleware answers the request again. */
class Assigned implements Entry {
  readonly owner = undefined;

  constructor(
    readonly prev: Entry | undefined,
    private readonly value: unknown,
  ) {}

  rateLimit(): unknown {
    return this.value;
  }
}

type Locals = { [ENTRY]?: Entry };

/**
 * Who took a request whose response has no `res.locals` (not Express'), whose `req.rateLimit` is set on the request
 * itself. A weak map's values are kept by the garbage collector as long as their keys, at a cost: a mark is small
 * and holds nothing of the request.
 */
class Mark implements Entry {
  constructor(
    readonly prev: Entry | undefined,
    readonly owner: unknown,
  ) {}

  rateLimit(): unknown {
    return UNSET;
  }
}

/** The marks of requests whose response has no `res.locals`. */
const elsewhere = new WeakMap<object, Entry>();

function localsOf(res: object | undefined): Locals | undefined {
  const locals = (res as { locals?: unknown } | undefined)?.locals;
  return typeof locals === 'object' && locals !== null ? (locals as Locals) : undefined;
}

/** The newest entry of a request, or undefined when no middleware has taken it. */
export function entryOf(req: object, res: object): Entry | undefined {
  const locals = localsOf(res);
  return locals ? locals[ENTRY] : elsewhere.get(req);
}

/** Makes `entry` the newest of the request's. */
export function addEntry(req: object, res: object, entry: Entry): void {
  const locals = localsOf(res);
  if (locals) locals[ENTRY] = entry;
  else elsewhere.set(req, new Mark(entry.prev, entry.owner));
}

function shownBy(entry: Entry | undefined): unknown {
  for (let e = entry; e !== undefined; e = e.prev) {
    const value = e.rateLimit();
    if (value !== UNSET) return value;
  }
  return undefined;
}

function accessor(): PropertyDescriptor {
  const get = function rateLimit(this: { res?: object }): unknown {
    return shownBy(this.res === undefined ? undefined : entryOf(this, this.res));
  };
  const set = function rateLimit(this: { res?: object }, value: unknown): void {
    if (this.res !== undefined && localsOf(this.res))
      addEntry(this, this.res, new Assigned(entryOf(this, this.res), value));
    else Object.defineProperty(this, 'rateLimit', { value, writable: true, enumerable: true, configurable: true });
  };
  Object.defineProperty(get, ACCESSOR, { value: true });
  return { get, set, enumerable: false, configurable: true };
}

/**
 * Whether `req.rateLimit` reads the entries of requests of prototype `proto`, defining the accessor where it can.
 * Express gives every request its app's request object as prototype, and every app's request object inherits from
 * Express' own, just above Node's IncomingMessage: the accessor is defined there once, so that `req.rateLimit`
 * reads the same whichever app (or mounted sub-app) the request is in. Where that object is not found, something
 * on the way already has a `rateLimit` of another kind, or it cannot take one, nothing is defined.
 */
function readable(proto: object | null): boolean {
  let base = proto;
  for (;;) {
    if (base === null) return false;
    if (Object.prototype.hasOwnProperty.call(base, 'rateLimit')) break;
    const up = Object.getPrototypeOf(base) as object | null;
    if (up === IncomingMessage.prototype) break;
    base = up;
  }
  const existing = Object.getOwnPropertyDescriptor(base, 'rateLimit');
  if (existing) return (existing.get as { [ACCESSOR]?: boolean } | undefined)?.[ACCESSOR] === true;
  if (Object.getPrototypeOf(base) !== IncomingMessage.prototype || !Object.isExtensible(base)) return false;
  Object.defineProperty(base, 'rateLimit', accessor());
  return true;
}

const known = new WeakMap<object, boolean>();
let lastProto: object | null | undefined;
let lastReadable = false;

/**
 * Whether `req.rateLimit` reads the request's entries (else the middleware sets it on the request): one comparison
 * while requests keep one prototype, their app's request object.
 */
export function readsEntries(req: object, res: object): boolean {
  if (!localsOf(res)) return false;
  const proto = Object.getPrototypeOf(req) as object | null;
  if (proto === lastProto) return lastReadable;
  let found = proto === null ? false : known.get(proto);
  if (found === undefined) {
    found = readable(proto);
    known.set(proto as object, found);
  }
  lastProto = proto;
  lastReadable = found;
  return found;
}
