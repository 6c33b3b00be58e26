// The example server as a real process: `npm start` on free ports over HTTP, stopped by a signal; bad settings stop it with one line.
import { type ChildProcessByStdio, execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { appendFileSync, cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import request from 'supertest';
import type * as App from '../example-server/app';
import type * as Env from '../example-server/env';
import { DEFAULT_HOST, DEFAULT_PORTS, startupFromEnv, storeFromEnv } from '../example-server/env';
import type * as Listings from '../lib/contract/listings';
import { tokenKey } from '../lib/contract/keys';
import { describeRedis, redisForBlock, scanKeys } from './helpers/redis';

const root = join(__dirname, '..');
const main = join(root, 'build', 'example-server', 'main.js');
const SETTINGS = ['LISTING', 'PORT', 'PORT_A', 'PORT_B', 'HOST', 'LOG', 'REDIS_URL'];

interface Run {
  readonly child: ChildProcessByStdio<null, Readable, Readable>;
  readonly stdout: () => string;
  readonly stderr: () => string;
  readonly exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Resolves once stdout contains `text`; rejects if the process ends first. */
  readonly printed: (text: string) => Promise<void>;
}

/**
 * Starts a command in the project with the given settings and none of the example server's from this environment.
 * A process still running after `limitMs` is killed, so that none outlives its test.
 */
function run(command: string, args: string[], settings: Record<string, string>, limitMs = 25_000): Run {
  const env = { ...process.env };
  for (const name of SETTINGS) delete env[name];
  const child = spawn(command, args, { cwd: root, env: { ...env, ...settings }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const limit = setTimeout(() => child.kill('SIGKILL'), limitMs);
  const exit = once(child, 'close').then(([code, signal]) => {
    clearTimeout(limit);
    return { code: code as number | null, signal: signal as NodeJS.Signals | null };
  });
  const printed = (text: string) =>
    new Promise<void>((resolve, reject) => {
      const check = () => {
        if (!stdout.includes(text)) return;
        child.stdout.off('data', check);
        resolve();
      };
      child.stdout.on('data', check);
      check();
      void exit.then(() => reject(new Error(`exited before printing ${JSON.stringify(text)}:\n${stdout}${stderr}`)));
    });
  return { child, stdout: () => stdout, stderr: () => stderr, exit, printed };
}

/** The base URL printed for each listing. */
function baseUrls(stdout: string): Record<string, string> {
  return Object.fromEntries(
    [...stdout.matchAll(/^ {2}listing ([AB]) \(\w+\) at (http:\S+)/gm)].map((m) => [m[1], m[2]]),
  );
}

const READY = 'Stop it with Ctrl-C.';

beforeAll(() => {
  execFileSync('npm', ['run', 'build:example'], { cwd: root, stdio: 'ignore' });
}, 120_000);

it('npm start builds and starts both listings, serves and limits them over HTTP, and closes on SIGTERM', async () => {
  const server = run('npm', ['start'], { PORT_A: '0', PORT_B: '0' }, 110_000);
  await server.printed(READY);
  const out = server.stdout();
  expect(out).toContain('listing-limits example server: memory store, access log on (LOG=0 turns it off).\n');
  const urls = baseUrls(out);
  expect(Object.keys(urls)).toEqual(['A', 'B']);
  expect(out).toContain(`  listing A (servers) at ${urls.A}  try: curl -i ${urls.A}/v1/servers/1\n`);
  expect(out).toContain(`  listing B (bots) at ${urls.B}  try: curl -i ${urls.B}/v1/bots/1\n`);
  expect(out).toContain(`    contact page ${urls.B}/limits/request, operator's page off (set ADMIN_TOKEN)\n`);
  expect(urls.A).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  expect((await fetch(`${urls.B}/limits/request`)).status).toBe(200);
  expect((await fetch(`${urls.B}/admin/limits`)).status).toBe(404);

  const server1 = await fetch(`${urls.A}/v1/servers/1`);
  expect(server1.status).toBe(200);
  expect(server1.headers.get('x-ratelimit-remaining')).toBe('5');
  expect(await server1.json()).toMatchObject({ id: '1', name: 'Forest Lounge' });
  expect((await fetch(`${urls.A}/v1/bots`)).status).toBe(404);

  const upvotes = () => fetch(`${urls.B}/v1/bots/1/upvotes`, { headers: { Authorization: 'process-test' } });
  expect((await upvotes()).status).toBe(200);
  expect((await upvotes()).status).toBe(200);
  const refused = await upvotes();
  expect(refused.status).toBe(429);
  const body = (await refused.json()) as { retryAfter: number };
  expect(body).toMatchObject({
    success: false,
    code: 429,
    message: 'You are sending too many requests, please slow down',
  });
  expect(refused.headers.get('retry-after')).toBe(String(body.retryAfter));

  await server.printed('[B] GET /v1/bots/1/upvotes -> 429 | GET /v1/bots/:id/upvotes: refused, retry after ');
  expect(server.stdout()).toContain('[A] GET /v1/servers/1 -> 200 | GET /v1/servers/:id: 5 of 6 left\n');
  expect(server.stdout()).toContain('[B] GET /v1/bots/1/upvotes -> 200 | GET /v1/bots/:id/upvotes: 1 of 2 left\n');

  server.child.kill('SIGTERM');
  expect(await server.exit).toEqual({ code: 0, signal: null });
  expect(server.stdout()).toContain('example-server: SIGTERM, closing.\nexample-server: closed.\n');
  await expect(fetch(`${urls.A}/v1/statistics`)).rejects.toThrow();
  await expect(fetch(`${urls.B}/v1/statistics`)).rejects.toThrow();
}, 120_000);

describe('npm start builds the example server only when a file it is built from changed', () => {
  /** A copy of what the build reads and writes, build/ included, each file with its time, inside the project. */
  let copy: string;
  beforeAll(() => {
    mkdirSync(join(root, '.pack-test'), { recursive: true });
    copy = mkdtempSync(join(root, '.pack-test', 'example-build-'));
    for (const name of ['package.json', 'tsconfig.json', 'example-server', 'lib', 'build']) {
      cpSync(join(root, name), join(copy, name), { recursive: true, preserveTimestamps: true });
    }
  });
  afterAll(() => rmSync(copy, { recursive: true, force: true }));

  /** Every file of the copy's build/, with when it was last written. */
  const built = () =>
    Object.fromEntries(
      readdirSync(join(copy, 'build'), { recursive: true, encoding: 'utf8' })
        .filter((name) => statSync(join(copy, 'build', name)).isFile())
        .sort()
        .map((name) => [name, statSync(join(copy, 'build', name)).mtimeMs]),
    );
  const build = () => execFileSync('npm', ['run', 'build:example'], { cwd: copy, stdio: 'pipe' });

  it('nothing changed: no file of build/ is written', () => {
    const before = built();
    expect(before).toHaveProperty([join('example-server', 'main.js')]);
    build();
    expect(built()).toEqual(before);
  });

  it('a file of lib/ changed: built again, with the change', () => {
    appendFileSync(join(copy, 'lib', 'durations.ts'), 'export const BUILT_AGAIN = 1;\n');
    build();
    expect(readFileSync(join(copy, 'build', 'lib', 'durations.js'), 'utf8')).toContain('exports.BUILT_AGAIN = 1;');
  });

  it('an output removed: built again', () => {
    rmSync(join(copy, 'build', 'example-server', 'main.js'));
    build();
    expect(statSync(join(copy, 'build', 'example-server', 'main.js')).isFile()).toBe(true);
  });
});

it('WINDOW=sliding counts every listing in sliding windows, and says so', async () => {
  const server = run(process.execPath, [main], { LISTING: 'B', PORT: '0', LOG: '0', WINDOW: 'sliding' });
  await server.printed(READY);
  expect(server.stdout()).toContain('listing-limits example server: memory store, sliding windows, access log off.\n');
  const { B: url } = baseUrls(server.stdout());
  const statuses = [];
  for (let i = 0; i < 3; i++) statuses.push((await fetch(`${url}/v1/bots/1`)).status);
  expect(statuses).toEqual([200, 200, 429]);
  server.child.kill('SIGTERM');
  expect(await server.exit).toEqual({ code: 0, signal: null });
}, 60_000);

it('LISTING=B with PORT starts only listing B at the root of PORT; LOG=0 keeps it quiet; SIGINT closes it', async () => {
  const server = run(process.execPath, [main], {
    LISTING: 'B',
    PORT: '0',
    LOG: '0',
    ADMIN_TOKEN: 'admin-0123456789abcdef',
  });
  await server.printed(READY);
  const urls = baseUrls(server.stdout());
  expect(Object.keys(urls)).toEqual(['B']);
  expect(server.stdout()).toContain(
    `    contact page ${urls.B}/limits/request, operator's page ${urls.B}/admin/limits\n`,
  );
  const login = await fetch(`${urls.B}/admin/limits`, { redirect: 'manual' });
  expect([login.status, login.headers.get('location')]).toEqual([303, '/admin/limits/login']);
  expect(server.stdout()).toContain('listing-limits example server: memory store, access log off.\n');

  const stats = await fetch(`${urls.B}/v1/statistics`);
  expect(stats.status).toBe(200);
  expect(await stats.json()).toMatchObject({ bots: 150, users: 60 });
  const servers = await fetch(`${urls.B}/v1/servers`);
  expect(servers.status).toBe(404);
  expect(await servers.json()).toEqual({
    success: false,
    code: 404,
    message: 'Not found: GET /v1/servers is not an endpoint of this listing.',
  });

  server.child.kill('SIGINT');
  expect(await server.exit).toEqual({ code: 0, signal: null });
  expect(server.stdout()).not.toContain('[B]');
  expect(server.stderr()).toBe('');
});

describeRedis('REDIS_URL', () => {
  const redis = redisForBlock();

  it('counts in Redis, one prefix per listing, and closes the connection on SIGTERM', async () => {
    const server = run(process.execPath, [main], { LISTING: 'B', PORT: '0', LOG: '0', REDIS_URL: redis.url });
    await server.printed(READY);
    const { host } = new URL(redis.url);
    expect(server.stdout()).toContain(`listing-limits example server: Redis store at ${host}, access log off.\n`);
    const urls = baseUrls(server.stdout());
    // 2 requests per 15 seconds: a window no slow machine runs out of between two requests.
    const get = () => fetch(`${urls.B}/v1/bots/1/upvotes`, { headers: { Authorization: 'redis-process-test' } });
    expect((await get()).headers.get('x-ratelimit-remaining')).toBe('1');
    expect((await get()).headers.get('x-ratelimit-remaining')).toBe('0');
    expect((await get()).status).toBe(429);
    const keys = await scanKeys(redis.client, 'listing-limits-example:B:GET /v1/bots/:id/upvotes:*');
    expect(keys).toEqual([`listing-limits-example:B:GET /v1/bots/:id/upvotes:${tokenKey('redis-process-test')}`]);
    expect(await redis.client.get(keys[0] ?? '')).toBe('3');

    server.child.kill('SIGTERM');
    expect(await server.exit).toEqual({ code: 0, signal: null });
    expect(server.stdout()).toContain('example-server: closed.\n');
    expect(server.stderr()).toBe('');
  });
});

describe('a bad setting stops start-up with one line naming the variable, and exit code 1', () => {
  it.each([
    [{ LISTING: 'C' }, 'LISTING must be A or servers, B or bots (unset starts every listing); got "C".'],
    [
      { LISTING: 'B ' },
      'LISTING must be A or servers, B or bots (unset starts every listing); got "B ". Did you mean `B` (bots)?',
    ],
    [
      { LISTING: 'listing-b' },
      'LISTING must be A or servers, B or bots (unset starts every listing); got "listing-b". Did you mean `B` (bots)?',
    ],
    [{ LISTING: 'A', PORT: '70000' }, 'PORT must be a port number from 0 to 65535 (0 picks a free port); got "70000".'],
    [{ LISTING: 'B', PORT: 'http' }, 'PORT must be a port number from 0 to 65535 (0 picks a free port); got "http".'],
    [{ LISTING: 'B', PORT: '-1' }, 'PORT must be a port number from 0 to 65535 (0 picks a free port); got "-1".'],
    [{ PORT_A: '30 01' }, 'PORT_A must be a port number from 0 to 65535 (0 picks a free port); got "30 01".'],
    [{ PORT: '3001' }, 'PORT is read only with LISTING=A or LISTING=B; to start every listing, set PORT_A and PORT_B.'],
    [{ LISTING: 'A', PORT_B: '3002' }, 'PORT_B is read only when every listing starts; with LISTING=A, set PORT.'],
    [{ PORT_A: '4000', PORT_B: '4000' }, 'PORT_A and PORT_B must differ; both are 4000.'],
    [{ LOG: 'yes' }, 'LOG must be 1 (access log on) or 0 (off); got "yes".'],
    [{ WINDOW: 'rolling' }, 'WINDOW must be fixed or sliding; got "rolling".'],
    [
      { REDIS_URL: 'localhost:6379' },
      'REDIS_URL must be a redis:// or rediss:// URL such as redis://127.0.0.1:6379; got "localhost:6379".',
    ],
    [
      { REDIS_URL: 'redis://127.0.0.1:1' },
      'REDIS_URL: no Redis answered at 127.0.0.1:1 within 3 seconds (connect ECONNREFUSED 127.0.0.1:1).',
    ],
    [
      { REDIS_URL: 'http://127.0.0.1:6379' },
      'REDIS_URL must be a redis:// or rediss:// URL such as redis://127.0.0.1:6379; got "http://127.0.0.1:6379".',
    ],
  ])('%p', async (settings, message) => {
    const server = run(process.execPath, [main], settings);
    expect(await server.exit).toEqual({ code: 1, signal: null });
    expect(server.stderr()).toBe(`example-server: ${message}\n`);
    expect(server.stdout()).toBe('');
  });

  describe('a port in use', () => {
    let taken: Server;
    let port: number;
    beforeEach(async () => {
      taken = createServer().listen(0, '127.0.0.1');
      await once(taken, 'listening');
      port = (taken.address() as { port: number }).port;
    });
    afterEach(() => taken.close());

    it('names PORT', async () => {
      const server = run(process.execPath, [main], { LISTING: 'A', PORT: String(port) });
      expect(await server.exit).toEqual({ code: 1, signal: null });
      expect(server.stderr()).toBe(
        `example-server: Port ${port} is already in use; set PORT to a free port (0 picks one).\n`,
      );
    });

    it('names PORT_B, and closes listing A, already started', async () => {
      const server = run(process.execPath, [main], { PORT_A: '0', PORT_B: String(port) });
      expect(await server.exit).toEqual({ code: 1, signal: null });
      expect(server.stderr()).toBe(
        `example-server: Port ${port} is already in use; set PORT_B to a free port (0 picks one).\n`,
      );
    });
  });
});

describe('settings from the environment', () => {
  it('by default: both listings on 3001 and 3002 at 127.0.0.1, access log on, memory store', () => {
    expect(startupFromEnv({})).toEqual({
      listeners: [
        { listing: 'A', port: 3001, portVariable: 'PORT_A' },
        { listing: 'B', port: 3002, portVariable: 'PORT_B' },
      ],
      host: '127.0.0.1',
      log: true,
      window: 'fixed',
      adminToken: undefined,
    });
    expect(startupFromEnv({ ADMIN_TOKEN: 'admin-0123456789abcdef' }).adminToken).toBe('admin-0123456789abcdef');
    expect(() => startupFromEnv({ ADMIN_TOKEN: 'short' })).toThrow(
      'ADMIN_TOKEN must be at least 16 characters long; it has 5.',
    );
    expect([DEFAULT_PORTS, DEFAULT_HOST]).toEqual([{ A: 3001, B: 3002 }, '127.0.0.1']);
    const stores = storeFromEnv({});
    expect(stores.description).toBe('memory store');
    expect(stores.forListing('A')).not.toBe(stores.forListing('B'));
  });

  it.each([
    [{ LISTING: 'A' }, [{ listing: 'A', port: 3001, portVariable: 'PORT' }]],
    [{ LISTING: 'B', PORT: '8080' }, [{ listing: 'B', port: 8080, portVariable: 'PORT' }]],
    [{ LISTING: 'bots' }, [{ listing: 'B', port: 3002, portVariable: 'PORT' }]],
    [{ LISTING: 'servers', PORT: '0' }, [{ listing: 'A', port: 0, portVariable: 'PORT' }]],
    [
      { PORT_A: '0', PORT_B: '0' },
      [
        { listing: 'A', port: 0, portVariable: 'PORT_A' },
        { listing: 'B', port: 0, portVariable: 'PORT_B' },
      ],
    ],
    [
      { LISTING: '', PORT: '', PORT_B: '4002' },
      [
        { listing: 'A', port: 3001, portVariable: 'PORT_A' },
        { listing: 'B', port: 4002, portVariable: 'PORT_B' },
      ],
    ],
  ])('%p listens on %p', (env, listeners) => {
    expect(startupFromEnv(env).listeners).toEqual(listeners);
  });

  it('a third table in lib/contract/listings.ts starts with the others, on the next port, without another edit', async () => {
    let env: typeof Env | undefined;
    let app: typeof App | undefined;
    jest.isolateModules(() => {
      jest.doMock('../lib/contract/listings', () => {
        const actual = jest.requireActual<typeof Listings>('../lib/contract/listings');
        const extended = {
          ...actual.listings,
          C: [{ method: 'GET', path: '/v1/things/:id', limit: 1, windowMs: 1000 }],
        };
        return {
          ...actual,
          listings: extended,
          listingNames: Object.keys(extended),
          listingFamilies: { ...actual.listingFamilies, C: 'things' },
        };
      });
      env = jest.requireActual<typeof Env>('../example-server/env');
      app = jest.requireActual<typeof App>('../example-server/app');
    });
    if (!env || !app) throw new Error('not loaded');
    expect(env.startupFromEnv({ PORT_B: '4002' }).listeners).toEqual([
      { listing: 'A', port: 3001, portVariable: 'PORT_A' },
      { listing: 'B', port: 4002, portVariable: 'PORT_B' },
      { listing: 'C', port: 3003, portVariable: 'PORT_C' },
    ]);
    for (const LISTING of ['C', 'things']) {
      expect(env.startupFromEnv({ LISTING }).listeners).toEqual([{ listing: 'C', port: 3003, portVariable: 'PORT' }]);
    }
    expect(() => env?.startupFromEnv({ LISTING: 'D' })).toThrow(
      'LISTING must be A or servers, B or bots, C or things (unset starts every listing); got "D".',
    );
    expect(() => env?.startupFromEnv({ PORT: '1' })).toThrow(
      'PORT is read only with LISTING=A, LISTING=B, or LISTING=C; to start every listing, set PORT_A, PORT_B, and PORT_C.',
    );
    expect(() => env?.startupFromEnv({ PORT_A: '4000', PORT_C: '4000' })).toThrow(
      'PORT_A and PORT_C must differ; both are 4000.',
    );
    // Without example data of its own, each endpoint answers with its name, behind the limiter.
    const response = await request(app.createExampleApp({ listing: 'C' as never })).get('/v1/things/7');
    expect([response.status, response.body, response.headers['ratelimit']]).toEqual([
      200,
      { endpoint: 'GET /v1/things/:id', params: { id: '7' } },
      '"GET /v1/things/:id";r=0;t=1',
    ]);
  });

  it('HOST, LOG=0 and WINDOW=sliding', () => {
    expect(startupFromEnv({ HOST: '::1', LOG: '0', WINDOW: 'sliding' })).toMatchObject({
      host: '::1',
      log: false,
      window: 'sliding',
    });
  });
});
