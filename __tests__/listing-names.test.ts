// Listings by name: a listing's letter or what it lists, accepted wherever a listing is named, and hints for names
// that are neither, which never point at the wrong listing.
import express from 'express';
import fc from 'fast-check';
import request from 'supertest';
import { createExampleApp } from '../example-server/app';
import { startupFromEnv } from '../example-server/env';
import { type AnyListingName, type ListingName, listingLimits, listings } from '../lib';
import { listingClient } from '../lib/client';
import { runCli } from '../lib/verify/command';
import { listingHint, listingOf } from '../lib/contract/listing-names';
import { listingFamilies } from '../lib';
import { planVerification } from '../lib/verify';
import { serverPerTest } from './helpers/serve';

const start = serverPerTest();

const names: [AnyListingName, ListingName][] = [
  ['A', 'A'],
  ['a', 'A'],
  ['servers', 'A'],
  ['B', 'B'],
  ['b', 'B'],
  ['bots', 'B'],
];

describe.each(names)('%s names listing %s', (name, letter) => {
  it('in the data: each family is the collection its table lists, and no other table has it', () => {
    expect(listingOf(name)).toBe(letter);
    const family = listingFamilies[letter];
    expect(listings[letter].some((row) => row.path === `/v1/${family}`)).toBe(true);
    for (const other of Object.keys(listings) as ListingName[]) {
      if (other !== letter) expect(listings[other].some((row) => row.path.includes(`/${family}`))).toBe(false);
    }
  });

  it("for listingLimits: the listing's own limit on GET /v1/statistics", async () => {
    const limits = listingLimits(name);
    const app = express();
    app.use(limits);
    app.get('/v1/statistics', (_req, res) => res.json({}));
    const limit = letter === 'A' ? 1 : 5;
    const statuses: number[] = [];
    let policy = '';
    for (let i = 0; i <= limit; i++) {
      const res = await request(app).get('/v1/statistics');
      statuses.push(res.status);
      policy = res.headers['ratelimit-policy'] as string;
    }
    expect(statuses).toEqual([...Array<number>(limit).fill(200), 429]);
    expect(policy).toBe(`"GET /v1/statistics";q=${limit};w=1`);
    limits.close();
  });

  it("for listingClient: the listing's endpoints, and no other", async () => {
    const served = await start(createExampleApp({ listing: letter }));
    const api = listingClient({ listing: name, baseUrl: served.url });
    const family = listingFamilies[letter];
    await expect(api.get(`/v1/${family}/:id`, { id: '1' })).resolves.toMatchObject({ id: '1' });
    const other = family === 'bots' ? 'servers' : 'bots';
    await expect(api.get(`/v1/${other}`)).rejects.toMatchObject({ code: 'ERR_UNKNOWN_ENDPOINT' });
    await api.close();
  });

  it('for verifyContract and planVerification: the plan of the listing', () => {
    const plan = (listing: AnyListingName) =>
      planVerification({ baseUrl: 'http://127.0.0.1:1', listing }).endpoints.map((e) => e.endpoint);
    expect(plan(name)).toEqual(listings[letter].map((row) => `${row.method} ${row.path}`));
  });

  it('for the command: --listing', async () => {
    let stdout = '';
    const context = { stdout: { write: (text: string) => (stdout += text) }, stderr: { write: () => true } };
    const argv = ['verify', 'http://127.0.0.1:1', '--listing', name, '--dry-run', '--json'];
    expect(await runCli(argv, context)).toBe(0);
    const plan = JSON.parse(stdout) as { endpoints: { endpoint: string }[] };
    expect(plan.endpoints.map((e) => e.endpoint)).toEqual(listings[letter].map((row) => `${row.method} ${row.path}`));
  });

  it('for the example server: createExampleApp and LISTING', async () => {
    const app = createExampleApp({ listing: name });
    await request(app).get(`/v1/${listingFamilies[letter]}/1`).expect(200);
    expect(startupFromEnv({ LISTING: name }).listeners).toEqual([
      { listing: letter, port: letter === 'A' ? 3001 : 3002, portVariable: 'PORT' },
    ]);
  });
});

describe('a name that is no listing gets a hint only when it means one listing', () => {
  it.each([
    ['B ', ' Did you mean `B` (bots)?'],
    ['b ', ' Did you mean `B` (bots)?'],
    [' a', ' Did you mean `A` (servers)?'],
    ['listing-b', ' Did you mean `B` (bots)?'],
    ['Listing A', ' Did you mean `A` (servers)?'],
    ['listing_a', ' Did you mean `A` (servers)?'],
    ['bot', ' Did you mean `bots` (listing B)?'],
    ['Bots', ' Did you mean `bots` (listing B)?'],
    ['bots ', ' Did you mean `bots` (listing B)?'],
    ['listing-bots', ' Did you mean `bots` (listing B)?'],
    ['server', ' Did you mean `servers` (listing A)?'],
    ['srevers', ' Did you mean `servers` (listing A)?'],
    ['C', ''],
    ['', ''],
    ['listing', ''],
    ['bost', ''],
    ['users', ''],
    ['statistics', ''],
    ['AB', ''],
  ])('%p → %p', (given, hint) => {
    expect(listingHint(given)).toBe(hint);
    expect(listingOf(given)).toBeUndefined();
  });

  it('in the error of listingLimits, with the names it takes', () => {
    expect(() => listingLimits('bot' as never)).toThrow(
      'listingLimits: listing "bot" is not a listing. Use "A" or "servers", "B" or "bots", or an array of rows. ' +
        'Did you mean `bots` (listing B)?',
    );
    expect(() => listingClient({ listing: 'listing-b' as never, baseUrl: 'http://127.0.0.1:1' })).toThrow(
      'listingClient: options.listing "listing-b" is not a listing. Use "A" or "servers", "B" or "bots", or an ' +
        'array of rows. Did you mean `B` (bots)?',
    );
  });

  it('in the command: --listing', async () => {
    let stderr = '';
    const context = { stdout: { write: () => true }, stderr: { write: (text: string) => (stderr += text) } };
    expect(await runCli(['verify', 'http://127.0.0.1:1', '--listing', 'bot'], context)).toBe(2);
    expect(stderr).toBe(
      'listing-limits: --listing must be A or B; got "bot". Did you mean `bots` (listing B)? (see listing-limits --help)\n',
    );
  });

  /** `word` with up to `edits` letters changed, added or removed, in any case, with spaces or a `listing-` before. */
  const typoOf = (word: string, edits: number) =>
    fc
      .tuple(
        fc.array(
          fc.tuple(fc.nat(), fc.constantFrom('change', 'add', 'remove'), fc.string({ minLength: 1, maxLength: 1 })),
          { maxLength: edits },
        ),
        fc.boolean(),
        fc.constantFrom('', ' ', 'listing-', 'Listing '),
      )
      .map(([changes, upper, before]) => {
        let typo = word;
        for (const [at, how, char] of changes) {
          const i = at % (typo.length + 1);
          if (how === 'add') typo = typo.slice(0, i) + char + typo.slice(i);
          else if (how === 'change') typo = typo.slice(0, i) + char + typo.slice(i + 1);
          else typo = typo.slice(0, i) + typo.slice(i + 1);
        }
        return before + (upper ? typo.toUpperCase() : typo);
      });

  it.each(Object.entries(listingFamilies))(
    'a typo of what listing %s lists (%s) is never hinted as another listing',
    (letter, family) => {
      const others = Object.keys(listingFamilies).filter((other) => other !== letter);
      fc.assert(
        fc.property(typoOf(family, Math.floor(family.length / 3)), (typo) => {
          const hint = listingHint(typo);
          for (const other of others) {
            expect(hint).not.toContain(`(listing ${other})`);
            expect(hint).not.toContain(`\`${other}\``);
          }
        }),
        { numRuns: 2000 },
      );
    },
  );
});
