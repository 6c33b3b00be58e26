// Nothing a client sends makes the middleware answer 5xx or crash the process.
import { createServer, request as httpRequest, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { createApp, expressVersions } from './helpers/app';
import { rawRequest } from './helpers/raw';
import { useFakeWindows } from './helpers/stores';

describe.each(expressVersions)('%s', (_name, express) => {
  let server: Server;
  beforeEach((done) => {
    server = createServer({ maxHeaderSize: 256 * 1024 }, createApp({ express, listing: 'B' })).listen(
      0,
      '127.0.0.1',
      done,
    );
  });
  afterEach((done) => {
    server.close(done);
  });

  it.each([
    ['an Authorization value of 64 KiB', '/v1/bots/1', `Authorization: ${'k'.repeat(64 * 1024)}\r\n`, 200],
    ['an Authorization value of binary bytes', '/v1/bots/1', `Authorization: \u00ff\u00fe\u0080binary\u00c3\r\n`, 200],
    ['control bytes in Authorization', '/v1/bots/1', 'Authorization: a\u0001b\r\n', 400],
    ['an empty Authorization value', '/v1/bots/1', 'Authorization: \r\n', 200],
    ['malformed percent-encoding in a parameter', '/v1/bots/%E0%A4%A', '', 400],
    ['a lone percent sign', '/v1/bots/%', '', 400],
    ['a path of 8,000 characters in one parameter', `/v1/bots/${'a'.repeat(8000)}`, '', 200],
    ['a path of 8,000 characters in many segments', `/v1${'/bots'.repeat(1600)}`, '', 404],
    ['a NUL byte in the path', '/v1/bots/a%00b', '', 200],
  ])('%s', async (_case, target, headers, status) => {
    const res = await rawRequest(server, 'GET', target, headers);
    expect(res.status).toBe(status);
    if (status === 200) expect(res.headers['x-ratelimit-bucket']).toBe('GET /v1/bots/:id');
    // The process is still serving.
    const after = await request(server).get('/v1/statistics');
    expect(after.status).toBe(200);
  });

  it('counts requests whose socket has no remote address (req.ip undefined) on one shared counter', async () => {
    const socketPath = join(tmpdir(), `listing-limits-${process.pid}-${Date.now()}.sock`);
    useFakeWindows(); // 2 requests a second: the window must not end between them on a slow machine
    const unix = createServer(createApp({ express, listing: 'B' })).listen(socketPath);
    await new Promise((resolve) => unix.once('listening', resolve));
    const get = () =>
      new Promise<{ status?: number; remaining: unknown }>((resolve, reject) => {
        httpRequest({ socketPath, path: '/v1/bots/1' }, (res) => {
          res.resume();
          res.on('end', () => resolve({ status: res.statusCode, remaining: res.headers['x-ratelimit-remaining'] }));
        })
          .on('error', reject)
          .end();
      });
    try {
      expect(await get()).toEqual({ status: 200, remaining: '1' });
      expect(await get()).toEqual({ status: 200, remaining: '0' });
      expect(await get()).toEqual({ status: 429, remaining: '0' });
    } finally {
      jest.useRealTimers();
      unix.close();
    }
  });
});

describe('trust proxy warning', () => {
  let emitWarning: jest.SpyInstance;
  beforeEach(() => {
    emitWarning = jest.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
  });
  afterEach(() => emitWarning.mockRestore());

  it('warns once when requests carry X-Forwarded-For while trust proxy is off', async () => {
    const app = createApp();
    await request(app).get('/v1/bots').set('X-Forwarded-For', '203.0.113.1').expect(200);
    await request(app).get('/v1/bots').set('X-Forwarded-For', '203.0.113.2').expect(200);
    expect(emitWarning.mock.calls).toEqual([
      [
        "listing-limits: requests carry X-Forwarded-For but the app's 'trust proxy' setting is off, so req.ip is the proxy's address and every client behind the proxy shares one counter. Set app.set('trust proxy', ...) to your proxies.",
        { code: 'LISTING_LIMITS_TRUST_PROXY' },
      ],
    ]);
  });

  it('stays quiet when trust proxy is set, or without X-Forwarded-For', async () => {
    const proxied = createApp({ setup: (app) => app.set('trust proxy', 'loopback') });
    await request(proxied).get('/v1/bots').set('X-Forwarded-For', '203.0.113.1').expect(200);
    await request(createApp()).get('/v1/bots').expect(200);
    expect(emitWarning).not.toHaveBeenCalled();
  });
});
