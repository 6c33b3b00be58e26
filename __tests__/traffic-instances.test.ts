// The whole site's traffic: three instances in processes of their own on one Redis, one with the operator's page.
// Each adds its counts every interval; the page and `traffic()` show their sum, exactly, whatever another program
// wrote in the traffic's keys. A request itself sends Redis no traffic command (MONITOR).
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import type Redis from 'ioredis';
import request from 'supertest';
import express from 'express';
import { type EndpointRow, listingLimits, redisStore, type TrafficSummary } from '../lib';
import { tokenKey } from '../lib/contract/keys';
import { SCRIPTS } from '../lib/stores/redis/scripts';
import { sha1 } from '../lib/stores/state';
import { compiledLib } from './helpers/compiled';
import { flat } from './helpers/pages';
import { describeRedisServer, ioredisClient, RedisServer } from './helpers/redis';
import { type Instance, send, startInstance, stopInstances, within } from './helpers/store-processes';

const ROWS: readonly EndpointRow[] = [
  { method: 'GET', path: '/v1/a', limit: 3, windowMs: 60_000 },
  { method: 'GET', path: '/v1/b', limit: 1000, windowMs: 60_000 },
];
/** Short, so that the test waits little; the bound each wait is held to is a hang's, not a speed. */
const INTERVAL_MS = 300;
const HANG_MS = 20_000;

describeRedisServer("the site's traffic, from three instances in three processes on one Redis", () => {
  let redis: RedisServer;
  let admin: Redis;
  let instances: Instance[] = [];
  const prefix = `traffic-${process.pid}`;

  beforeAll(async () => {
    const lib = compiledLib();
    redis = await RedisServer.start();
    admin = await ioredisClient(redis.url);
    instances = await Promise.all(
      [true, false, false].map((page) => {
        const options = { rows: ROWS, timeoutMs: 10_000, onFailure: 'closed', page, trafficIntervalMs: INTERVAL_MS };
        return startInstance(lib, 'ioredis', redis.url, prefix, options, 'traffic-instance.js');
      }),
    );
  }, 120_000);

  afterAll(async () => {
    await stopInstances(instances);
    for (const instance of instances) expect(instance.stderr()).toBe('');
    admin?.disconnect();
    await redis?.close();
  });

  const trafficOf = async (instance: Instance): Promise<TrafficSummary> => {
    const res = await fetch(`${instance.url}/control/traffic`, { signal: AbortSignal.timeout(HANG_MS) });
    return (await res.json()) as TrafficSummary;
  };
  const totals = (summary: TrafficSummary) =>
    summary.endpoints.map(({ endpoint, allowed, refused }) => ({ endpoint, allowed, refused }));
  const page = async (instance: Instance) => {
    const res = await fetch(`${instance.url}/admin/limits/`, {
      headers: { 'x-operator': 'yes' },
      signal: AbortSignal.timeout(HANG_MS),
    });
    return { status: res.status, text: flat(await res.text()) };
  };

  /** What the instances answered: per endpoint, allowed and refused; per token, its refusals. */
  const sent = { a: [0, 0], b: [0, 0] } as Record<'a' | 'b', [number, number]>;
  const refusals = new Map<string, number>();

  it('traffic() and the page show every instance, pages or none: their sum, exactly, and 3 instances', async () => {
    const [withPage] = instances as [Instance];
    // Requests of four tokens on /v1/a (3 each a minute) and of one on /v1/b, spread over the three instances.
    const jobs: [Instance, 'a' | 'b', string][] = [];
    for (let t = 0; t < 4; t++) {
      for (let i = 0; i < 5 + t; i++) jobs.push([instances[(i + t) % 3] as Instance, 'a', `Bot token-${t}`]);
    }
    for (let i = 0; i < 20; i++) jobs.push([instances[i % 3] as Instance, 'b', 'Bot b']);
    const statuses = await Promise.all(jobs.map(([instance, path, token]) => send(instance, `/v1/${path}`, token)));
    statuses.forEach((status, i) => {
      const [, path, token] = jobs[i] as [Instance, 'a' | 'b', string];
      sent[path][status === 200 ? 0 : 1]++;
      if (status !== 200) refusals.set(tokenKey(token), (refusals.get(tokenKey(token)) ?? 0) + 1);
    });
    expect(statuses.filter((s) => s !== 200 && s !== 429)).toEqual([]);
    expect(sent).toEqual({ a: [12, 14], b: [20, 0] });
    const expected = [
      { endpoint: 'GET /v1/a', allowed: 12, refused: 14 },
      { endpoint: 'GET /v1/b', allowed: 20, refused: 0 },
    ];

    await within(performance.now(), HANG_MS, 'the page reads what every instance counted', async () => {
      const summary = await trafficOf(withPage);
      return JSON.stringify(totals(summary)) === JSON.stringify(expected) && summary.instances === 3;
    });
    // Three more intervals: each instance adds its counts once, never again.
    await new Promise((resolve) => setTimeout(resolve, 3 * INTERVAL_MS));
    const summary = await trafficOf(withPage);
    expect(totals(summary)).toEqual(expected);
    // An instance counts while it added its counts within three intervals: a stalled process may drop out a moment.
    expect([2, 3]).toContain(summary.instances);
    expect(summary.minutes.reduce((n, m) => n + m.allowed, 0)).toBe(32);
    expect(summary.minutes.reduce((n, m) => n + m.refused, 0)).toBe(14);
    // The clients refused most often, by the hashes of their tokens, as this instance alone would show them.
    expect(summary.refused).toEqual([3, 2, 1, 0].map((t) => ({ key: tokenKey(`Bot token-${t}`), count: 5 + t - 3 })));
    expect([...refusals.values()].sort()).toEqual([2, 3, 4, 5]);

    const scope =
      '<h2 id="traffic-h">The last hour on every instance</h2><p class="hint">3 instances share the store. Each adds ' +
      'its counts every few seconds.</p>';
    let shown = await page(withPage);
    await within(performance.now(), HANG_MS, 'the page counts three instances', async () => {
      shown = await page(withPage);
      return shown.text.includes(scope);
    });
    expect(shown.status).toBe(200);
    expect(shown.text).toContain(
      '<tr><td><a href="/admin/limits/#traffic" aria-current="true">All endpoints</a></td><td>32</td><td>14</td></tr>',
    );
    expect(shown.text).not.toContain('Bot token');
    expect(instances.map((i) => i.errors)).toEqual([[], [], []]);
  });

  it('entries another program wrote in the traffic keys are skipped and told to onError, never a 5xx', async () => {
    const [withPage] = instances as [Instance];
    const before = await trafficOf(withPage);
    const minute = Math.floor(Date.now() / 60_000);
    const cli = (...args: string[]) => {
      const done = spawnSync('redis-cli', ['-p', String(redis.port), ...args], { encoding: 'utf8' });
      expect(done.status).toBe(0);
    };
    const key = (kind: string, ago: number) => `${prefix}:{runtime}:${kind}:${minute - ago}`;
    cli('HSET', key('traffic', 30), 'a GET /v1/a', 'lots', 'r GET /v1/a', '-5', 'x GET /v1/a', '7');
    cli('SET', key('refused', 30), 'not a set');
    cli('ZADD', key('refused', 31), 'inf', '<script>alert(1)</script>');
    cli('SET', key('traffic', 32), 'not a hash');
    cli('SET', `${prefix}:{runtime}:instances`, 'not a set');
    // A member that could be a custom key is one: shown as text, never as markup.
    cli('ZADD', key('refused', 33), '99', '<img src=x onerror=alert(1)>');

    await within(performance.now(), HANG_MS, 'the page instance tells what it skipped', async () => {
      const summary = await trafficOf(withPage);
      return withPage.errors.length >= 6 && summary.instances === 3;
    });
    const after = await trafficOf(withPage);
    expect(totals(after)).toEqual(totals(before));
    expect(after.refused).toEqual([{ key: '<img src=x onerror=alert(1)>', count: 99 }, ...before.refused]);
    expect(new Set(withPage.errors)).toEqual(new Set(['ERR_FOREIGN_ENTRY']));
    const shown = await page(withPage);
    expect(shown.status).toBe(200);
    expect(shown.text).toContain('<td>32</td><td>14</td>');
    expect(shown.text).not.toContain('<script>alert(1)');
    expect(shown.text).not.toContain('<img');
    expect(shown.text).toContain('title="&lt;img src=x onerror=alert(1)&gt;">&lt;img src=x onerror=ale…</a>');
    // The instances that read nothing replaced the set of instances, and were told nothing else.
    expect(instances.slice(1).map((i) => i.errors.filter((code) => code !== 'ERR_FOREIGN_ENTRY'))).toEqual([[], []]);
  });

  it('a request sends no traffic command: its counts wait for the flush', async () => {
    const client = await ioredisClient(redis.url);
    const limits = listingLimits(ROWS, {
      store: redisStore(client, { prefix: `${prefix}-monitor`, timeoutMs: 10_000, trafficIntervalMs: 60_000 }),
    });
    const app = express().use(limits);
    app.get('/v1/b', (_req, res) => res.json({ ok: true }));
    const cli = spawn('redis-cli', ['-p', String(redis.port), 'monitor'], { stdio: ['ignore', 'pipe', 'inherit'] });
    const lines: string[] = [];
    const marker = `end-${process.pid}`;
    const reader = createInterface({ input: cli.stdout });
    const started = once(reader, 'line');
    reader.on('line', (line) => lines.push(line));
    try {
      await started;
      for (let i = 0; i < 30; i++) await request(app).get('/v1/b').set('Authorization', 'Bot watched').expect(200);
      await admin.echo(marker);
      await within(performance.now(), HANG_MS, 'MONITOR shows the marker', () =>
        Promise.resolve(lines.some((line) => line.includes(marker))),
      );
    } finally {
      limits.close();
      client.disconnect();
      const exited = once(cli, 'exit');
      cli.kill();
      await exited;
    }
    const mine = lines.filter((line) => line.includes(`${prefix}-monitor:`));
    expect(mine.filter((line) => /"incr"/i.test(line))).toHaveLength(30);
    const traffic = sha1(SCRIPTS.traffic);
    expect(
      mine.filter((line) => /\{runtime\}:(traffic|refused|instances)/.test(line) || line.includes(traffic)),
    ).toEqual([]);
  });
});
