// The package's error classes answer `instanceof` for each other's copies (an app that loads the package both as an
// ES module and as CommonJS has two of each), and for nothing else.
import express from 'express';
import { RateLimiterMemory } from 'rate-limiter-flexible';
import request from 'supertest';
import { ListingLimitsError, listingLimits, StoreUnavailableError } from '../lib';
import { ListingClientError } from '../lib/client';
import type * as ClientErrors from '../lib/client/errors';
import type * as SharedErrors from '../lib/shared/errors';

type Errors = typeof SharedErrors & typeof ClientErrors;

/** A second copy of the errors' modules, as a second module system loads them: classes of their own. */
function otherCopy(): Errors {
  let copy: Errors | undefined;
  jest.isolateModules(() => {
    const shared = jest.requireActual<typeof SharedErrors>('../lib/shared/errors');
    copy = { ...shared, ...jest.requireActual<typeof ClientErrors>('../lib/client/errors') };
  });
  return copy as Errors;
}

const other = otherCopy();

type Make = (errors: Pick<Errors, 'ListingLimitsError' | 'StoreUnavailableError' | 'ListingClientError'>) => Error;
const classes: [string, Make][] = [
  ['ListingLimitsError', (e) => new e.ListingLimitsError('ERR_INVALID_OPTION', 'options.x', 'is wrong.')],
  ['StoreUnavailableError', (e) => new e.StoreUnavailableError('closed')],
  ['ListingClientError', (e) => new e.ListingClientError('ERR_BANNED', 'GET /v1/bots', 'banned')],
];
const ours = { ListingLimitsError, StoreUnavailableError, ListingClientError };

describe.each(classes)('%s', (name, make) => {
  const Ours = ours[name as keyof typeof ours] as unknown as new (...args: never[]) => Error;
  const Theirs = other[name as keyof typeof ours] as unknown as new (...args: never[]) => Error;

  it('is two classes in two copies, each an instance of the other', () => {
    expect(Theirs).not.toBe(Ours);
    expect(make(other)).toBeInstanceOf(Ours);
    expect(make(ours)).toBeInstanceOf(Theirs);
    expect(make(ours)).toBeInstanceOf(Error);
    expect(make(other)).toBeInstanceOf(Error);
  });

  it('is not what the other classes are, nor an Error of its name, nor a look-alike', () => {
    for (const [otherName, makeOther] of classes) {
      if (otherName !== name) {
        expect(makeOther(ours) instanceof Ours).toBe(false);
        expect(makeOther(other) instanceof Ours).toBe(false);
      }
    }
    const lookAlike = Object.assign(new Error('x'), { name, code: 'ERR_INVALID_OPTION' });
    expect(lookAlike instanceof Ours).toBe(false);
    for (const value of [null, undefined, 'ListingLimitsError', 42, {}, () => {}])
      expect(value instanceof Ours).toBe(false);
  });

  it("keeps an app's subclass apart: its instances are ours, ours are not its", () => {
    class Mine extends (Ours as unknown as new () => Error) {}
    expect(new Mine()).toBeInstanceOf(Ours);
    expect(new Mine()).toBeInstanceOf(Mine);
    expect(make(ours) instanceof Mine).toBe(false);
    expect(make(other) instanceof Mine).toBe(false);
  });
});

it("the middleware fails closed on a custom store that rejects with the other copy's StoreUnavailableError", async () => {
  const store = () => {
    const limiter = new RateLimiterMemory({ points: 5, duration: 1 });
    limiter.consume = () => Promise.reject(new other.StoreUnavailableError('closed'));
    return limiter;
  };
  const limits = listingLimits('B', { store });
  const app = express();
  app.use(limits);
  app.get('/v1/bots', (_req, res) => res.json({}));
  const res = await request(app).get('/v1/bots').expect(503);
  expect(res.text).toBe(
    '{"success":false,"code":503,"message":"The service is temporarily unavailable, please try again later"}',
  );
  limits.close();
});
