// Which row a request belongs to: cases as data, as the Express router would route them.
import { type EndpointRow, listings } from '../lib';
import { compileMatcher } from '../lib/contract/match';

const matcherOf = (rows: readonly EndpointRow[]) =>
  compileMatcher(rows.map((row) => ({ method: row.method, path: row.path, value: `${row.method} ${row.path}` })));

const B = matcherOf(listings.B);
const A = matcherOf(listings.A);

describe('listing B', () => {
  it.each([
    { method: 'GET', path: '/v1/statistics', endpoint: 'GET /v1/statistics' },
    { method: 'GET', path: '/v1/statistics/', endpoint: 'GET /v1/statistics' },
    { method: 'GET', path: '/V1/Statistics', endpoint: 'GET /v1/statistics' },
    { method: 'HEAD', path: '/v1/statistics', endpoint: 'GET /v1/statistics' },
    { method: 'GET', path: '/v1/bots', endpoint: 'GET /v1/bots' },
    { method: 'GET', path: '/v1/BOTS/', endpoint: 'GET /v1/bots' },
    { method: 'GET', path: '/v1/bots/123', endpoint: 'GET /v1/bots/:id' },
    { method: 'GET', path: '/v1/bots/123/', endpoint: 'GET /v1/bots/:id' },
    { method: 'GET', path: '/v1/bots/%2F', endpoint: 'GET /v1/bots/:id' },
    { method: 'GET', path: '/v1/bots/..', endpoint: 'GET /v1/bots/:id' },
    { method: 'GET', path: '/v1/bots/a;b=c', endpoint: 'GET /v1/bots/:id' },
    { method: 'POST', path: '/v1/bots/123', endpoint: 'POST /v1/bots/:id' },
    { method: 'GET', path: '/v1/bots/123/upvotes', endpoint: 'GET /v1/bots/:id/upvotes' },
    { method: 'GET', path: '/v1/bots/123/UPTIME/', endpoint: 'GET /v1/bots/:id/uptime' },
    { method: 'GET', path: '/v1/users/9', endpoint: 'GET /v1/users/:id' },
    { method: 'GET', path: '/v1/users/9/bots', endpoint: 'GET /v1/users/:id/bots' },
    // Paths the Express router does not serve on these routes are not counted on them.
    { method: 'GET', path: '/v1/bots//', endpoint: undefined },
    { method: 'GET', path: '/v1//bots', endpoint: undefined },
    { method: 'GET', path: '/v1/bots//upvotes', endpoint: undefined },
    { method: 'GET', path: '/v1/b%6Fts', endpoint: undefined },
    { method: 'GET', path: '/v1/bots/1/2', endpoint: undefined },
    { method: 'GET', path: '/v2/bots', endpoint: undefined },
    { method: 'GET', path: '/v1/servers', endpoint: undefined },
    { method: 'GET', path: '/', endpoint: undefined },
    { method: 'GET', path: '*', endpoint: undefined },
    { method: 'PUT', path: '/v1/bots/1', endpoint: undefined },
    { method: 'POST', path: '/v1/bots', endpoint: undefined },
    { method: 'HEAD', path: '/v1/bots/1/upvotes', endpoint: 'GET /v1/bots/:id/upvotes' },
  ])('$method $path → $endpoint', ({ method, path, endpoint }) => {
    expect(B(method, path)).toBe(endpoint);
  });
});

describe('listing A', () => {
  it.each([
    { method: 'GET', path: '/v1/servers', endpoint: 'GET /v1/servers' },
    { method: 'GET', path: '/v1/servers/1', endpoint: 'GET /v1/servers/:id' },
    { method: 'GET', path: '/v1/servers/1/upvotes', endpoint: 'GET /v1/servers/:id/upvotes' },
    { method: 'GET', path: '/v1/users/1/servers', endpoint: 'GET /v1/users/:id/servers' },
    { method: 'GET', path: '/v1/users/1/bots', endpoint: undefined },
    { method: 'POST', path: '/v1/servers/1', endpoint: undefined },
  ])('$method $path → $endpoint', ({ method, path, endpoint }) => {
    expect(A(method, path)).toBe(endpoint);
  });
});

describe('custom tables', () => {
  const custom = matcherOf([
    { method: 'GET', path: '/v1/things/special', limit: 1, windowMs: 1000 },
    { method: 'GET', path: '/v1/things/:id', limit: 1, windowMs: 1000 },
    { method: 'GET', path: '/v1/files/*rest', limit: 1, windowMs: 1000 },
    { method: 'GET', path: '/v1/docs{/:lang}', limit: 1, windowMs: 1000 },
    { method: 'GET', path: '/v1/img-:id.png', limit: 1, windowMs: 1000 },
    { method: 'GET', path: '/:anything/first', limit: 1, windowMs: 1000 },
    { method: 'GET', path: '/v1/first', limit: 1, windowMs: 1000 },
  ]);

  it.each([
    { path: '/v1/things/special', endpoint: 'GET /v1/things/special' },
    { path: '/v1/things/other', endpoint: 'GET /v1/things/:id' },
    { path: '/v1/files/a/b/c', endpoint: 'GET /v1/files/*rest' },
    { path: '/v1/docs', endpoint: 'GET /v1/docs{/:lang}' },
    { path: '/v1/docs/en', endpoint: 'GET /v1/docs{/:lang}' },
    { path: '/v1/img-7.png', endpoint: 'GET /v1/img-:id.png' },
    // Several rows match: the first in table order wins, as the first route registered would in Express.
    { path: '/v1/first', endpoint: 'GET /:anything/first' },
    { path: '/v1/things', endpoint: undefined },
  ])('GET $path → $endpoint', ({ path, endpoint }) => {
    expect(custom('GET', path)).toBe(endpoint);
  });

  it('finds every row of a 1,000-row table', () => {
    const rows = Array.from({ length: 1000 }, (_, i) => ({
      method: i % 2 ? 'POST' : 'GET',
      path: i % 3 ? `/v1/resource${i}/:id` : `/v1/resource${i}`,
      limit: 1,
      windowMs: 1000,
    }));
    const big = matcherOf(rows);
    for (const row of rows) {
      expect(big(row.method, row.path.replace(':id', 'x'))).toBe(`${row.method} ${row.path}`);
    }
    expect(big('GET', '/v1/resource1000')).toBeUndefined();
  });
});
