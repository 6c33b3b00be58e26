// The cluster store in real processes: a node:cluster primary with workers sharing one port, judged by what was counted.
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { tokenKey } from '../lib/contract/keys';
import { compiledLib } from './helpers/compiled';
import { csrfOf } from './helpers/pages';

const fixture = join(__dirname, 'helpers', 'cluster-app.js');
/** Every wait on a process of the test: far above what any step takes on a busy machine. */
const DEADLINE_MS = 30_000;

interface Answer {
  readonly status: number;
  readonly worker: string;
  readonly body: string;
  readonly headers: Record<string, string | string[] | undefined>;
}

interface ClusterApp {
  readonly child: ChildProcessWithoutNullStreams;
  /** A request on a connection of its own, so that the primary hands it to the next worker. */
  send(method: string, path: string, headers?: Record<string, string>, body?: string, ms?: number): Promise<Answer>;
  /** An operator's method of app `app`, called on whichever worker takes the request. */
  control(
    app: number,
    method: string,
    ...args: unknown[]
  ): Promise<{ answer: Record<string, unknown>; worker: string }>;
  /** Sends a command to the primary and waits for the line it answers with. */
  command(command: object, answer: string): Promise<Record<string, unknown>>;
  /** What the processes wrote on stderr since the last `judged()`. */
  stderr(): string;
  /** Marks what stderr holds as judged. */
  judged(): void;
  stop(): Promise<void>;
}

const TABLE = [
  { method: 'GET', path: '/r/:id', limit: 3, windowMs: 60_000 },
  { method: 'GET', path: '/r/:id', limit: 5, windowMs: 120_000 },
];

async function startCluster(options: object): Promise<ClusterApp> {
  const child = spawn(process.execPath, [fixture, compiledLib(), JSON.stringify(options)]);
  let stderr = '';
  let judged = 0;
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const lines: Record<string, unknown>[] = [];
  const waiters: (() => void)[] = [];
  createInterface({ input: child.stdout }).on('line', (line) => {
    lines.push(JSON.parse(line) as Record<string, unknown>);
    for (const wake of waiters.splice(0)) wake();
  });
  const line = async (key: string): Promise<Record<string, unknown>> => {
    const started = Date.now();
    for (;;) {
      const at = lines.findIndex((l) => key in l);
      if (at >= 0) return lines.splice(at, 1)[0] as Record<string, unknown>;
      if (Date.now() - started > DEADLINE_MS) throw new Error(`no ${key} line; stderr: ${stderr}`);
      await new Promise<void>((wake) => {
        waiters.push(wake);
        setTimeout(wake, 200);
      });
    }
  };
  const { port } = (await line('port')) as { port: number };
  const send = (method: string, path: string, headers: Record<string, string> = {}, body?: string, ms = DEADLINE_MS) =>
    new Promise<Answer>((resolve, reject) => {
      const req = httpRequest({ port, host: '127.0.0.1', method, path, headers, agent: false, timeout: ms });
      req.on('response', (res) => {
        let text = '';
        res.on('data', (chunk: Buffer) => (text += chunk.toString()));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            worker: String(res.headers['x-worker']),
            body: text,
            headers: res.headers,
          }),
        );
      });
      req.on('timeout', () => req.destroy(new Error(`${method} ${path}: no answer`)));
      req.on('error', reject);
      req.end(body);
    });
  return {
    child,
    send,
    control: async (app, method, ...args) => {
      const res = await send(
        'POST',
        `/control/${app}/${method}`,
        { 'content-type': 'application/json' },
        JSON.stringify(args),
      );
      return { answer: JSON.parse(res.body) as Record<string, unknown>, worker: res.worker };
    },
    command: (command, answer) => {
      child.stdin.write(`${JSON.stringify(command)}\n`);
      return line(answer);
    },
    stderr: () => stderr.slice(judged),
    judged: () => void (judged = stderr.length),
    stop: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.on('exit', () => resolve());
        child.stdin.end();
      }),
  };
}

/** Each status's number of answers. */
function tally(answers: readonly Answer[]): Record<number, number> {
  const counts: Record<number, number> = {};
  for (const { status } of answers) counts[status] = (counts[status] ?? 0) + 1;
  return counts;
}

const burst = (app: ClusterApp, n: number, path: string, headers: Record<string, string>) =>
  Promise.all(Array.from({ length: n }, () => app.send('GET', path, headers)));

describe('clusterStore() over three node:cluster workers sharing one port', () => {
  let app: ClusterApp;
  beforeAll(async () => {
    app = await startCluster({
      workers: 3,
      apps: [
        { prefix: 'b', listing: 'B' },
        { prefix: 'fixed-a', rows: TABLE },
        { prefix: 'fixed-b', rows: TABLE },
        { prefix: 'sliding', rows: TABLE, window: 'sliding' },
        {
          prefix: 'rule',
          rows: [{ method: 'GET', path: '/ban/:id', limit: 2, windowMs: 60_000 }],
          ban: { after: 4, within: 60_000, duration: 60_000 },
        },
      ],
    });
  }, 60_000);
  afterAll(() => app?.stop());
  afterEach(() => expect(app.stderr()).toBe(''));

  it("admits exactly 2 of the issue's burst of 24 with one token on GET /v1/bots/:id, over every worker", async () => {
    // Two rounds in three at most: a round the machine spread over more than the endpoint's second is not judged.
    for (let round = 0; ; round++) {
      const started = Date.now();
      const answers = await burst(app, 24, '/v1/bots/1', { authorization: `burst-${round}` });
      if (Date.now() - started > 900 && round < 2) continue;
      expect(tally(answers)).toEqual({ 200: 2, 429: 22 });
      expect(new Set(answers.map((a) => a.worker)).size).toBe(3);
      break;
    }
  });

  it.each([
    [1, 'fixed windows'],
    [2, 'fixed windows under another prefix'],
    [3, 'sliding windows'],
  ])('counts app %i (%s, two limits) as one: 3 of 24, its counts read the same on every worker', async (i) => {
    const answers = await burst(app, 24, '/r/1', { authorization: 'limits', 'x-app': String(i) });
    expect(tally(answers)).toEqual({ 200: 3, 429: 21 });
    const reads = await Promise.all([0, 1, 2].map(() => app.control(i, 'usage', { token: 'limits' })));
    for (const { answer } of reads) {
      const usage = answer.result as { used: number; limit: number }[];
      expect(usage.map(({ used, limit }) => [used, limit])).toEqual([
        [3, 3],
        [3, 5],
      ]);
    }
    expect(new Set(reads.map((r) => r.worker)).size).toBe(3);
  });

  it('has a ban, a reset and a grant made on one worker in force on the others within a second', async () => {
    const token = { authorization: 'operated' };
    expect(tally(await burst(app, 6, '/r/2', { ...token, 'x-app': '1' }))).toEqual({ 200: 3, 429: 3 });
    const inForceElsewhere = async (worker: string, status: number, headers: Record<string, string>) => {
      const started = Date.now();
      const seen = new Set<string>();
      for (;;) {
        const answer = await app.send('GET', '/r/2', headers);
        if (answer.worker !== worker && answer.status === status) seen.add(answer.worker);
        if (seen.size === 2) return Date.now() - started;
        if (Date.now() - started > DEADLINE_MS) throw new Error(`never ${status}`);
      }
    };
    const reset = await app.control(1, 'reset', { token: 'operated' });
    expect(reset.answer).toEqual({ result: true });
    expect(await inForceElsewhere(reset.worker, 200, { ...token, 'x-app': '1' })).toBeLessThan(1000);
    const ban = await app.control(1, 'ban', { token: 'operated' }, { duration: 60_000, reason: 'a test' });
    expect(ban.answer).toEqual({ result: true });
    expect(await inForceElsewhere(ban.worker, 403, { ...token, 'x-app': '1' })).toBeLessThan(1000);
    const history = await app.control(1, 'history');
    expect((history.answer.result as { action: string }[]).map((e) => e.action)).toEqual(['ban', 'reset']);
    expect((await app.control(1, 'unban', { token: 'operated' })).answer).toEqual({ result: true });
    const grant = await app.control(1, 'grant', { token: 'granted' }, { multiplier: 10 });
    expect(grant.answer).toEqual({ result: true });
    // grants() asks the primary first: the burst counts no request of the client on a worker before its grant is known.
    const knowing = new Set<string>();
    for (const started = Date.now(); knowing.size < 3 && Date.now() - started < DEADLINE_MS;) {
      const grants = await app.control(1, 'grants');
      expect((grants.answer.result as { key: string }[]).map((g) => g.key)).toEqual([tokenKey('granted')]);
      knowing.add(grants.worker);
    }
    expect(knowing.size).toBe(3);
    const granted = await burst(app, 40, '/r/3', { authorization: 'granted', 'x-app': '1' });
    expect(tally(granted)).toEqual({ 200: 30, 429: 10 });
  });

  it("bans by the ban rule on every worker, counting a client's refusals over all of them", async () => {
    const headers = { authorization: 'ruled', 'x-app': '4' };
    const answers = await burst(app, 12, '/ban/1', headers);
    expect(answers.filter((a) => a.status === 200).length).toBe(2);
    const started = Date.now();
    const refused = new Set<string>();
    while (refused.size < 3 && Date.now() - started < DEADLINE_MS) {
      const answer = await app.send('GET', '/ban/1', headers);
      if (answer.status === 403) refused.add(answer.worker);
    }
    expect(Date.now() - started).toBeLessThan(1000);
    const bans = await app.control(4, 'bans');
    expect((bans.answer.result as { by: string; reason: string }[]).map((b) => [b.by, b.reason])).toEqual([
      ['rule', 'limit'],
    ]);
  });

  it('serves the pages from any worker: a login on one is good on all; 30 logins over all, 10 tried', async () => {
    const cookiesOf = (answer: Answer) =>
      ((answer.headers['set-cookie'] as string[] | undefined) ?? []).map((c) => c.split(';')[0] as string);
    const form = await app.send('GET', '/admin/limits/login');
    const _csrf = encodeURIComponent(csrfOf(form.body));
    const formCookie = cookiesOf(form).join('; ');
    const post = (token: string) =>
      app.send(
        'POST',
        '/admin/limits/login',
        { cookie: formCookie, 'content-type': 'application/x-www-form-urlencoded' },
        `token=${token}&_csrf=${_csrf}`,
      );
    const login = await post('admin-token-of-every-worker');
    expect(login.status).toBe(303);
    const cookie = [...cookiesOf(form), ...cookiesOf(login)].join('; ');
    const pages = await Promise.all([0, 1, 2].map(() => app.send('GET', '/admin/limits/', { cookie })));
    expect(pages.map((p) => p.status)).toEqual([200, 200, 200]);
    expect(new Set(pages.map((p) => p.worker)).size).toBe(3);
    const logins = await Promise.all(Array.from({ length: 29 }, (_, i) => post(`guess-${i}`)));
    // The right token's login was the first of the 10 a client may try.
    expect(tally(logins)).toEqual({ 401: 9, 429: 20 });
    expect(new Set(logins.map((a) => a.worker)).size).toBe(3);
  });

  it('skips malformed messages of its kind both ways, each side warning once, and counts on', async () => {
    expect((await app.send('POST', '/hostile')).status).toBe(200);
    await app.command({ hostile: true }, 'hostile');
    expect(tally(await burst(app, 12, '/r/4', { authorization: 'after', 'x-app': '1' }))).toEqual({ 200: 3, 429: 9 });
    const warned = app.stderr().match(/\[LISTING_LIMITS_CLUSTER_MESSAGE\]/g) ?? [];
    // The primary once, and each worker once.
    expect(warned.length).toBe(4);
    expect(app.stderr()).toMatch(/a message of the cluster store from worker \d was skipped \(no list of calls\)/);
    expect(app.stderr()).toMatch(/a message of the cluster store from the primary was skipped \(no list of answers\)/);
    app.judged();
  });

  it('keeps every count when a worker is killed during a burst; its replacement counts on them at once', async () => {
    const others = await burst(app, 2, '/r/5', { authorization: 'other', 'x-app': '1' });
    expect(tally(others)).toEqual({ 200: 2 });
    // A connection handed to the worker as it is killed is never answered: each waits 3 s at most.
    const during = Promise.allSettled(
      Array.from({ length: 24 }, () => app.send('GET', '/r/6', { authorization: 'killed', 'x-app': '1' }, '', 3000)),
    );
    const { replaced } = await app.command({ kill: 0 }, 'replaced');
    const admitted = (await during).filter((r) => r.status === 'fulfilled' && r.value.status === 200).length;
    expect(admitted).toBeLessThanOrEqual(3);
    const after = await burst(app, 9, '/r/6', { authorization: 'killed', 'x-app': '1' });
    // Every request counted before is still counted, on every worker and the new one.
    expect(tally(after)).toEqual({ 429: 9 });
    expect(after.map((a) => a.worker)).toContain(String(replaced));
    const usage = await app.control(1, 'usage', { token: 'other' });
    expect((usage.answer.result as { used: number }[]).map((l) => l.used)).toEqual([2, 2]);
  }, 60_000);
});

describe('a cluster whose primary never called clusterPrimary()', () => {
  let app: ClusterApp;
  afterEach(() => app?.stop());

  it("answers each request by the store's onFailure within its timeoutMs, and an operator's call with its error", async () => {
    app = await startCluster({
      workers: 2,
      primary: false,
      timeoutMs: 300,
      onFailure: 'closed',
      apps: [{ prefix: 'p', listing: 'B' }],
    });
    const started = Date.now();
    const answers = await burst(app, 4, '/v1/bots/1', { authorization: 'alone' });
    expect(tally(answers)).toEqual({ 503: 4 });
    // 5 × timeoutMs bounds a request however busy its process.
    expect(Date.now() - started).toBeLessThan(5 * 300 + 2000);
    const { answer } = await app.control(0, 'usage', { token: 'alone' });
    expect(answer.code).toBe('ERR_STORE_UNAVAILABLE');
    expect(answer.error).toMatch(/did not answer within 5000 ms \(its callTimeoutMs\)/);
    await new Promise((resolve) => setTimeout(resolve, 5500));
    expect(app.stderr()).toMatch(/\[LISTING_LIMITS_STORE_NOT_CONNECTED\].*Call clusterPrimary\(\) in the primary/);
  }, 60_000);

  it("counts each worker in its own memory with onFailure: 'memory'", async () => {
    app = await startCluster({
      workers: 2,
      primary: false,
      timeoutMs: 300,
      onFailure: 'memory',
      apps: [{ prefix: 'p', listing: 'B' }],
    });
    const answers = await burst(app, 2, '/v1/bots/1', { authorization: 'fallback' });
    expect(tally(answers)).toEqual({ 200: 2 });
    expect(answers.map((a) => a.headers['x-ratelimit-remaining'])).toEqual(['1', '1']);
  }, 60_000);
});

describe('the memory store in node:cluster workers', () => {
  let app: ClusterApp;
  afterEach(() => app?.stop());

  it('warns once per worker that each counts alone, naming clusterStore() and redisStore()', async () => {
    app = await startCluster({ workers: 2, store: 'memory', apps: [{ listing: 'B' }, { listing: 'A' }] });
    const warnings = app
      .stderr()
      .split('\n')
      .filter((line) => line.includes('Warning'));
    const text = (id: number) =>
      `[LISTING_LIMITS_PER_PROCESS] Warning: listing-limits: this process is node:cluster worker ${id}, and the ` +
      'memory store counts in this process alone: N processes let a client through up to N times the limits. ' +
      'Share the counts with clusterStore() (clusterPrimary() in the primary) or redisStore(client); ' +
      'memoryStore({ perProcess: true }) counts per process without this warning.';
    expect(warnings.map((line) => line.replace(/^\(node:\d+\) /, '')).sort()).toEqual([text(1), text(2)]);
  }, 60_000);

  it('says nothing with memoryStore({ perProcess: true })', async () => {
    app = await startCluster({ workers: 2, store: 'perProcess', apps: [{ listing: 'B' }] });
    expect((await app.send('GET', '/v1/bots/1')).status).toBe(200);
    expect(app.stderr()).toBe('');
  }, 60_000);
});

describe('the memory store in a PM2 instance', () => {
  /** What one process started as PM2 starts an app wrote on stderr: PM2 6 sets these variables in each instance. */
  const started = (instances: string) =>
    new Promise<string>((resolve) => {
      const code = `require(${JSON.stringify(compiledLib())}).listingLimits('B').close();`;
      const env = { ...process.env, pm_id: '3', NODE_APP_INSTANCE: '1', exec_mode: 'fork_mode', instances };
      const child = spawn(process.execPath, ['-e', code], { env });
      let stderr = '';
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      child.on('exit', () => resolve(stderr.replace(/^\(node:\d+\) /, '')));
    });

  it('warns in one of several instances, even in fork mode, and not in an instance alone', async () => {
    expect(await started('2')).toBe(
      '[LISTING_LIMITS_PER_PROCESS] Warning: listing-limits: this process is PM2 instance 3 (fork_mode, instances: ' +
        '2), and the memory store counts in this process alone: N processes let a client through up to N times the ' +
        'limits. Share the counts with clusterStore() (clusterPrimary() in the primary) or redisStore(client); ' +
        'memoryStore({ perProcess: true }) counts per process without this warning.\n' +
        '(Use `node --trace-warnings ...` to show where the warning was created)\n',
    );
    expect(await started('1')).toBe('');
  });
});
