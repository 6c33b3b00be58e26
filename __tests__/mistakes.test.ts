// Mistakes a new user makes, none of them silent: each answered with a message that names what was given and the fix.
import type { ErrorRequestHandler } from 'express';
import express4 from 'express4';
import { RateLimiterMemory } from 'rate-limiter-flexible';
import request from 'supertest';
import { ListingLimitsError, ListingLimitsWarning, listingLimits } from '../lib';
import { limitsAdmin } from '../lib/pages';
import { expressVersions } from './helpers/app';

const made: { close(): void }[] = [];
afterEach(() => made.splice(0).forEach((limits) => limits.close()));
const limiter = (...args: Parameters<typeof listingLimits>) => {
  const limits = listingLimits(...args);
  made.push(limits);
  return limits;
};

/** The error handler of the test apps: the error's class, code and message, as JSON. */
const tellError: ErrorRequestHandler = (error: Error & { code?: string }, _req, res, _next) => {
  res.status(500).json({ instance: error instanceof ListingLimitsError, code: error.code, message: error.message });
};

const NOT_CALLED =
  'listingLimits: listingLimits was given to app.use() itself, so Express calls it with each request; call it and ' +
  "mount what it returns: app.use(listingLimits('B', options)).";

it('app.use(listingLimits), the factory uncalled: every request gets an error that says to call it, and the first a warning', async () => {
  const emitWarning = jest.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
  try {
    for (const [, express] of expressVersions) {
      const app = express();
      app.use(listingLimits as never);
      app.get('/v1/bots', (_req, res) => res.json({}));
      app.use(tellError);
      for (let i = 0; i < 2; i++) {
        const res = await request(app).get('/v1/bots').expect(500);
        expect(res.body).toEqual({ instance: true, code: 'ERR_NOT_CALLED', message: NOT_CALLED });
      }
    }
    // One warning in all, at the first request: the process has the mistake once.
    expect(emitWarning.mock.calls).toEqual([[NOT_CALLED, { code: 'LISTING_LIMITS_NOT_CALLED' }]]);
  } finally {
    emitWarning.mockRestore();
  }
});

describe.each(expressVersions)('with %s', (_name, express) => {
  describe('mounted after routes that answer endpoints of its table', () => {
    let emitWarning: jest.SpyInstance;
    beforeEach(() => {
      emitWarning = jest.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
    });
    afterEach(() => emitWarning.mockRestore());

    const message = (routes: string) =>
      'listing-limits: the limiter is mounted after routes that answer endpoints of its table, so Express answers ' +
      `their requests before the limiter sees them and none is counted: ${routes}. Mount it before the routes: ` +
      'app.use(listingLimits(...)) first.';

    /** Sends `times` GETs to `path`, each answered 200 without rate-limit headers; then lets the last finish. */
    const uncounted = async (app: ReturnType<typeof express>, path: string, times: number) => {
      for (let i = 0; i < times; i++) {
        const res = await request(app).get(path).expect(200);
        expect(res.headers.ratelimit).toBeUndefined();
      }
      await new Promise((resolve) => setImmediate(resolve));
    };

    it('routes of the app before it: a process warning and onError, once, naming each endpoint and its route', async () => {
      const onError = jest.fn();
      const app = express();
      app.get('/v1/bots/:botId', (_req, res) => res.json({}));
      app.get('/v1/statistics', (_req, res) => res.json({}));
      app.use(limiter('B', { onError }));
      app.get('/v1/users/:id', (_req, res) => res.json({}));
      // The 2 per second of GET /v1/bots/:id never apply: five in a row pass.
      await uncounted(app, '/v1/bots/1', 5);
      const text = message('GET /v1/statistics (route "/v1/statistics"), GET /v1/bots/:id (route "/v1/bots/:botId")');
      expect(emitWarning.mock.calls).toEqual([[text, { code: 'LISTING_LIMITS_MOUNT_ORDER' }]]);
      expect(onError.mock.calls).toEqual([[expect.any(ListingLimitsWarning), undefined]]);
      expect(onError.mock.calls[0][0]).toMatchObject({
        name: 'ListingLimitsWarning',
        code: 'LISTING_LIMITS_MOUNT_ORDER',
        message: text,
      });
      // Later requests, of either kind, say nothing more.
      await request(app).get('/v1/users/1').expect(200);
      await uncounted(app, '/v1/statistics', 2);
      expect(emitWarning).toHaveBeenCalledTimes(1);
      expect(onError).toHaveBeenCalledTimes(1);
    });

    it('routes in routers before it, at the root or under a path, and the limiter itself in a router', async () => {
      const app = express();
      const v1 = express.Router();
      v1.post('/bots/:id', (_req, res) => res.json({}));
      const inner = express.Router();
      inner.get('/v1/users/:id/bots', (_req, res) => res.json({}));
      app.use('/v1', v1);
      app.use(inner);
      const api = express.Router();
      api.get('/v1/bots', (_req, res) => res.json({}));
      api.use(limiter('B'));
      app.use(api);
      await uncounted(app, '/v1/bots', 1);
      expect(emitWarning.mock.calls).toEqual([
        [
          message(
            'GET /v1/bots (route "/v1/bots"), POST /v1/bots/:id (route "/v1/bots/:id"), GET /v1/users/:id/bots ' +
              '(route "/v1/users/:id/bots")',
          ),
          { code: 'LISTING_LIMITS_MOUNT_ORDER' },
        ],
      ]);
    });

    it('before the routes, with a catch-all and other paths before it, beside an app without a limiter: nothing', async () => {
      const other = express();
      other.get('/v1/bots/:id', (_req, res) => res.json({}));
      await uncounted(other, '/v1/bots/1', 3);
      const app = express();
      const everyPath = (express as unknown) === express4 ? '*' : '/{*any}';
      app.all(everyPath, (_req, res, next) => {
        res.setHeader('Access-Control-Allow-Origin', '*');
        next();
      });
      app.get('/health', (_req, res) => res.json({}));
      app.get('/v1/bots/:id/reviews', (_req, res) => res.json({}));
      app.use(limiter('B'));
      app.get('/v1/bots/:id', (_req, res) => res.json({}));
      await request(app).get('/health').expect(200);
      const res = await request(app).get('/v1/bots/1').expect(200);
      expect(res.headers.ratelimit).toBe('"GET /v1/bots/:id";r=1;t=1');
      await uncounted(other, '/v1/bots/1', 1);
      expect(emitWarning).not.toHaveBeenCalled();
    });

    it('closed before its app answers anything: nothing', async () => {
      const app = express();
      app.get('/v1/bots/:id', (_req, res) => res.json({}));
      const limits = listingLimits('B');
      app.use(limits);
      limits.close();
      await uncounted(app, '/v1/bots/1', 1);
      expect(emitWarning).not.toHaveBeenCalled();
    });
  });

  describe('mounted under a path', () => {
    let emitWarning: jest.SpyInstance;
    beforeEach(() => {
      emitWarning = jest.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
    });
    afterEach(() => emitWarning.mockRestore());

    const warning = (path: string) => [
      `listing-limits: the limiter is mounted under "${path}", which Express takes off req.path, so no path of its ` +
        `table (they start with ${path}) can match and nothing is counted. Mount it at the root: ` +
        'app.use(listingLimits(...)).',
      { code: 'LISTING_LIMITS_MOUNT_PATH' },
    ];

    it.each([
      ['/v1', '/v1/bots/1', '/v1'],
      ['/v1/', '/v1/bots/1', '/v1'],
      ['/v1/bots', '/v1/bots/1', '/v1/bots'],
      ['/v1', '/V1/bots/1', '/V1'],
    ])('app.use(%p, limits) counts nothing, and warns once naming the mount path', async (mount, path, named) => {
      const app = express();
      app.use(mount, limiter('B'));
      app.get('/v1/bots/:id', (_req, res) => res.json({}));
      for (let i = 0; i < 3; i++) {
        const res = await request(app).get(path).expect(200);
        expect(res.headers.ratelimit).toBeUndefined();
      }
      expect(emitWarning.mock.calls).toEqual([warning(named)]);
    });

    it('a router mounted at /v1 that mounts the limiter: warned the same, and onError told', async () => {
      const onError = jest.fn();
      const app = express();
      const router = express.Router();
      router.use(limiter('B', { onError }));
      router.get('/bots/:id', (_req, res) => res.json({}));
      app.use('/v1', router);
      await request(app).get('/v1/bots/1').expect(200);
      expect(emitWarning.mock.calls).toEqual([warning('/v1')]);
      expect(onError.mock.calls).toEqual([[expect.any(ListingLimitsWarning), undefined]]);
      expect(onError.mock.calls[0][0]).toMatchObject({ code: 'LISTING_LIMITS_MOUNT_PATH', message: warning('/v1')[0] });
    });

    it('a mount path the table does not start with (/api) counts its rows below it, and says nothing', async () => {
      const app = express();
      app.use('/api', limiter('B'));
      app.get('/api/v1/bots/:id', (_req, res) => res.json({}));
      app.get('/api/health', (_req, res) => res.json({}));
      const res = await request(app).get('/api/v1/bots/1').expect(200);
      expect(res.headers.ratelimit).toBe('"GET /v1/bots/:id";r=1;t=1');
      await request(app).get('/api/health').expect(200);
      expect(emitWarning).not.toHaveBeenCalled();
    });

    it('at the root: requests that match no row say nothing', async () => {
      const app = express();
      app.use(limiter('B'));
      app.get('/health', (_req, res) => res.json({}));
      await request(app).get('/health').expect(200);
      expect(emitWarning).not.toHaveBeenCalled();
    });
  });
});

describe('messages that name what was given and the fix', () => {
  it.each([
    [
      'a rate-limiter-flexible limiter as the store',
      () => limiter('B', { store: new RateLimiterMemory({ points: 1, duration: 1 }) as never }),
      'listingLimits: options.store is a RateLimiterMemory, one limiter; a store makes a limiter for each counter of ' +
        'the table. Use memoryStore() or redisStore(client), or a function that makes one: `(counter) => new ' +
        'RateLimiterMemory({ keyPrefix: counter.name, points: counter.limit, duration: counter.windowMs / 1000 })`.',
    ],
    [
      'a class instance that is no store',
      () => limiter('B', { store: new Map() as never }),
      'listingLimits: options.store must be a store: a function (counter) => rate-limiter-flexible limiter, such as ' +
        'memoryStore(); got an instance of Map.',
    ],
    [
      'a mistyped field of a grant',
      () => limiter('B', { grants: { 'Bot x': { multipler: 10 } as never } }),
      'listingLimits: options.grants["Bot x"].multipler is not a grant field. Did you mean `multiplier`?',
    ],
    [
      'a grant of no known shape',
      () => limiter('B', { grants: { 'Bot x': { times: 10 } as never } }),
      `listingLimits: options.grants["Bot x"] must be 'unlimited', { multiplier } or { rows }; got {"times":10}.`,
    ],
  ])('%s', (_name, make, message) => {
    expect(make).toThrow(ListingLimitsError);
    expect(make).toThrow(expect.objectContaining({ message }));
  });

  const secret = 'secret-admin-token-of-the-operators';
  it.each([
    [
      'a token given as authorize itself',
      { authorize: secret },
      'options.authorize',
      'limitsAdmin: options.authorize is a string of 35 characters; give an admin token as { token }: `authorize: ' +
        '{ token: process.env.ADMIN_TOKEN }`, tokens by name as { tokens }, or a function (req) => boolean.',
    ],
    [
      'an empty token, as `process.env.ADMIN_TOKEN ?? ""` gives without the variable',
      { authorize: { token: '' } },
      'options.authorize.token',
      'limitsAdmin: options.authorize.token must be a string of at least 16 characters; got an empty string. If it ' +
        'is read from an environment variable (process.env.ADMIN_TOKEN), set that variable to a secret.',
    ],
    [
      'no token, as `process.env.ADMIN_TOKEN` gives without the variable',
      { authorize: { token: undefined } },
      'options.authorize.token',
      'limitsAdmin: options.authorize.token must be a string of at least 16 characters; got undefined. If it is ' +
        'read from an environment variable (process.env.ADMIN_TOKEN), set that variable to a secret.',
    ],
    [
      'a short token',
      { authorize: { token: 'short' } },
      'options.authorize.token',
      'limitsAdmin: options.authorize.token must be a string of at least 16 characters; got a string of 5 characters.',
    ],
    [
      'a token beside a mistyped field',
      { authorize: { token: secret, tokn: secret } },
      'options.authorize.tokn',
      'limitsAdmin: options.authorize.tokn is not a field of authorize. Did you mean `token`?',
    ],
  ])('%s: the page names it, never its value', (_name, options, field, message) => {
    let error: unknown;
    try {
      limitsAdmin(limiter('B'), options as never);
    } catch (e) {
      error = e;
    }
    expect(error).toMatchObject({ field, message });
    expect((error as Error).message).not.toContain('secret-admin');
  });
});
