// The client's parts alone: its settings from the options, and the endpoint, URL and body of a call.
import { compileEndpoints, endpointOf, jsonOf, urlOf } from '../lib/client/endpoints';
import { resolveClient } from '../lib/client/options';

const settings = resolveClient({ listing: 'B', baseUrl: 'http://api.test/base/' });
const endpoints = compileEndpoints(settings);
const bot = endpointOf(endpoints, 'GET', '/v1/bots/:id');

it('settles the defaults once: base URL without its trailing slash, waits, retries, a minute of cache for lists', () => {
  const { baseUrl, maxWaitMs, timeoutMs, reportIntervalMs, retries, cacheMs, token } = settings;
  expect({ baseUrl, maxWaitMs, timeoutMs, reportIntervalMs, retries, token }).toEqual({
    baseUrl: 'http://api.test/base',
    maxWaitMs: 60_000,
    timeoutMs: 30_000,
    reportIntervalMs: 60_000,
    retries: 2,
    token: undefined,
  });
  expect(Object.fromEntries(cacheMs)).toEqual({
    '/v1/bots': 60_000,
    '/v1/bots/:id': 0,
    '/v1/bots/:id/uptime': 0,
    '/v1/bots/:id/upvotes': 0,
    '/v1/statistics': 0,
    '/v1/users/:id': 0,
    '/v1/users/:id/bots': 0,
  });
  const day = [{ method: 'GET', path: '/x', limit: 1, windowMs: 86_400_000 }];
  expect(resolveClient({ listing: day, baseUrl: 'http://api.test' }).maxWaitMs).toBe(86_400_000);
});

it('makes listeners quiet: what they throw is dropped', () => {
  const thrower = () => {
    throw new Error('no');
  };
  const quiet = resolveClient({ listing: 'B', baseUrl: 'http://api.test', onWait: thrower, onError: thrower });
  expect(() => quiet.onWait({ endpoint: 'GET /v1/bots', ms: 1, reason: 'table' })).not.toThrow();
  expect(() => quiet.onError(new Error('x'))).not.toThrow();
});

it.each([
  [{ id: '42' }, 'http://api.test/base/v1/bots/42'],
  [{ id: 7, fields: 'name' }, 'http://api.test/base/v1/bots/7?fields=name'],
  [{ id: 'a b/c' }, 'http://api.test/base/v1/bots/a%20b%2Fc'],
  [{ id: '1', q: 'x&y=z' }, 'http://api.test/base/v1/bots/1?q=x%26y%3Dz'],
])('urlOf(%j) is %s', (params, url) => {
  expect(urlOf(settings.baseUrl, bot, params)).toBe(url);
});

it('fills a wildcard as one segment, as the verifier does', () => {
  const files = resolveClient({
    listing: [{ method: 'GET', path: '/v1/files/*rest', limit: 1, windowMs: 1000 }],
    baseUrl: 'http://api.test',
  });
  const endpoint = endpointOf(compileEndpoints(files), 'GET', '/v1/files/*rest');
  expect(urlOf(files.baseUrl, endpoint, { rest: 'a/b' })).toBe('http://api.test/v1/files/a%2Fb');
});

it.each([
  [undefined, 'listingClient: GET /v1/bots/:id: params.id is required.'],
  [{ id: '' }, 'listingClient: GET /v1/bots/:id: params.id is required.'],
  [[], 'listingClient: GET /v1/bots/:id: params must be an object; got [].'],
  [{ id: '1', x: {} }, 'listingClient: GET /v1/bots/:id: params.x must be a string or a number.'],
])('urlOf(%j) throws ERR_INVALID_PARAMS: %s', (params, message) => {
  expect(() => urlOf(settings.baseUrl, bot, params)).toThrow(
    expect.objectContaining({ code: 'ERR_INVALID_PARAMS', message }),
  );
});

it('finds an endpoint by method and path shape, else names the nearest', () => {
  expect(bot.name).toBe('GET /v1/bots/:id');
  expect(() => endpointOf(endpoints, 'GET', '/v1/bot')).toThrow(
    expect.objectContaining({
      code: 'ERR_UNKNOWN_ENDPOINT',
      message: 'listingClient: GET "/v1/bot": is not an endpoint of the table. Did you mean `GET /v1/bots`?',
    }),
  );
});

it('a body is sent as JSON, or refused when it cannot be', () => {
  expect(jsonOf(bot, { server_count: 1 })).toBe('{"server_count":1}');
  expect(jsonOf(bot, undefined)).toBeUndefined();
  const loop: Record<string, unknown> = {};
  loop.self = loop;
  expect(() => jsonOf(bot, loop)).toThrow(expect.objectContaining({ code: 'ERR_INVALID_PARAMS' }));
});
