// The store guide's PostgreSQL sample, run as written by two app processes against a real PostgreSQL: one count for
// both from their first request on; with the database paused or stopped, each request gets onFailure (memory) within
// the deadline, never a 500, and counting is shared again once it is back.
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { Pool } from 'pg';
import { type Compiled, compile } from './helpers/compiled';
import { fences, manual, programOf } from './helpers/manual';
import { describePostgres, PostgresServer } from './helpers/postgres';

const sample = manual()
  .flatMap(fences)
  .filter((fence) => fence.code.includes('new RateLimiterPostgres('));

interface App {
  readonly url: string;
  readonly child: ChildProcess;
  /** What it wrote on stderr beside the harness's `@@listening` line. */
  told(): string[];
}

/** Runs the sample in a process of its own (helpers/sample-env.cjs: on a free port); resolves once it listens. */
function startApp(file: string, cwd: string, databaseUrl: string): Promise<App> {
  const child = spawn(process.execPath, ['--require', join(__dirname, 'helpers', 'sample-env.cjs'), file], {
    cwd,
    env: { ...process.env, DATABASE_URL: databaseUrl },
    stdio: ['ignore', 'inherit', 'pipe'],
  });
  let stderr = '';
  const told = () => stderr.split('\n').filter((line) => line !== '' && !line.startsWith('@@listening '));
  return new Promise((resolve, reject) => {
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
      const port = /^@@listening (\d+)$/m.exec(stderr)?.[1];
      if (port) resolve({ url: `http://127.0.0.1:${port}`, child, told });
    });
    child.once('exit', (code) => reject(new Error(`the sample exited with ${code}:\n${stderr}`)));
  });
}

/** A request's status and RateLimit field; the sample has no routes, so an allowed request is a 404. */
async function get(app: App, path: string, token: string): Promise<[number, string | null]> {
  const res = await fetch(`${app.url}${path}`, {
    headers: { Authorization: token },
    signal: AbortSignal.timeout(10_000),
  });
  await res.arrayBuffer();
  return [res.status, res.headers.get('ratelimit')];
}

/** `GET /v1/servers/:id`'s RateLimit field with `r` left, its window 15 s from a first request of a moment ago. */
const servers = (r: number) => expect.stringMatching(new RegExp(`^"GET /v1/servers/:id";r=${r};t=1[45]$`));

/** How many answers of each status. */
const tally = (answers: [number, unknown][]) =>
  answers.reduce<Record<number, number>>((t, [status]) => ({ ...t, [status]: (t[status] ?? 0) + 1 }), {});

describePostgres("the store guide's PostgreSQL sample, in two app processes", () => {
  let postgres: PostgresServer | undefined;
  let compiled: Compiled | undefined;
  let apps: App[] = [];
  let tokens = 0;
  const token = () => `Bearer token-${++tokens}`;

  beforeAll(async () => {
    expect(sample.map((fence) => fence.page)).toEqual(['docs/stores.md']);
    postgres = await PostgresServer.start();
    compiled = compile('postgres', { esm: false });
    const file = programOf(sample[0] as (typeof sample)[0], compiled.cjs, compiled.scratch);
    const { scratch } = compiled;
    // Both at once, as a deployment starts them: each makes the table, or finds it made.
    apps = await Promise.all([0, 1].map(() => startApp(file, scratch, (postgres as PostgresServer).url)));
  }, 120_000);

  afterAll(async () => {
    for (const { child } of apps) child.kill();
    await postgres?.close();
    compiled?.remove();
  });

  afterEach(() => {
    // Never a crash: a lost connection is only logged, by the pool's 'error' listener.
    expect(apps.map(({ child }) => child.exitCode)).toEqual([null, null]);
    expect(apps.flatMap((app) => app.told()).filter((line) => !line.startsWith('postgres: '))).toEqual([]);
  });

  /** Both processes count `key` on one count: the second sees the first's request. */
  async function shared(): Promise<boolean> {
    const key = token();
    const [a, b] = apps as [App, App];
    const first = await get(a, '/v1/servers/1', key);
    const second = await get(b, '/v1/servers/1', key);
    return first[1]?.includes(';r=5;') === true && second[1]?.includes(';r=4;') === true;
  }

  /** Waits, up to 10 s, until the processes share their counts again. */
  async function sharedAgain(): Promise<void> {
    const until = Date.now() + 10_000;
    while (!(await shared())) {
      if (Date.now() > until) throw new Error('counting was not shared again within 10 s');
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }

  it("answers each process's first request from the shared count, and a burst over both exactly", async () => {
    const [a, b] = apps as [App, App];
    const first = token();
    expect(await get(a, '/v1/servers/1', first)).toEqual([404, servers(5)]);
    expect(await get(b, '/v1/servers/1', first)).toEqual([404, servers(4)]);
    expect(await get(b, '/v1/statistics', first)).toEqual([404, '"GET /v1/statistics";r=0;t=1']);
    // The counts are PostgreSQL's: one row of each counter, under its name.
    const pool = new Pool({ connectionString: postgres?.url });
    try {
      const { rows } = await pool.query('SELECT key, points FROM rate_limits ORDER BY key');
      expect(rows).toEqual([
        { key: expect.stringMatching(/^GET \/v1\/servers\/:id:./), points: 2 },
        { key: expect.stringMatching(/^GET \/v1\/statistics:./), points: 1 },
      ]);
    } finally {
      await pool.end();
    }

    const burst = async (path: string, key: string) =>
      tally(await Promise.all(Array.from({ length: 20 }, (_, i) => get(i % 2 ? b : a, path, key))));
    expect(await burst('/v1/servers/7', token())).toEqual({ 404: 6, 429: 14 });
    expect(await burst('/v1/servers', token())).toEqual({ 404: 15, 429: 5 });
  }, 30_000);

  it('with the database paused, each request is counted in memory within the deadline, then shared again', async () => {
    const [a, b] = apps as [App, App];
    const key = token();
    postgres?.pause();
    const answers = [];
    for (const app of [a, a, a, b]) {
      const started = Date.now();
      answers.push([...(await get(app, '/v1/servers/2', key)), Date.now() - started < 5000]);
    }
    // Each process counts alone: 3 requests in one, 1 in the other. At most 5 × timeoutMs (1 s) each.
    expect(answers).toEqual([
      [404, servers(5), true],
      [404, servers(4), true],
      [404, servers(3), true],
      [404, servers(5), true],
    ]);
    postgres?.resume();
    await sharedAgain();
  }, 30_000);

  it('with the database stopped, each request is counted in memory within the deadline, then shared again', async () => {
    const [a, b] = apps as [App, App];
    const key = token();
    await postgres?.stop();
    const answers = [];
    for (const app of [a, b, b]) {
      const started = Date.now();
      answers.push([...(await get(app, '/v1/servers/3', key)), Date.now() - started < 5000]);
    }
    expect(answers).toEqual([
      [404, servers(5), true],
      [404, servers(5), true],
      [404, servers(4), true],
    ]);
    await postgres?.start();
    await sharedAgain();
  }, 30_000);
});
