// The benchmark's figures in the manual are the benchmark's: each block made from bench/results/*.json (a table, a
// quoted output) is what bench/docs.js makes of them, in the manual and in bench/README.md; every figure of the prose
// around them is read from them, and no figure of the README's Performance or of docs/performance.md is left unread.
import { bound, E, f1, f2, f3, figures, type Json, S, T, thousands } from './helpers/bench-figures';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { manual, type Page, root } from './helpers/manual';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const pairs = require('../bench/pairs.js') as { TARGETS: { target: string; pair: string }[] };
// eslint-disable-next-line @typescript-eslint/no-require-imports
const docs = require('../bench/docs.js') as {
  blocks(): Record<string, Record<string, string[]>>;
  blockOf(text: string, name: string): string | undefined;
};

const pages = [...manual(), { path: 'bench/README.md', text: readFileSync(join(root, 'bench', 'README.md'), 'utf8') }];
const page = (path: string): Page => pages.find((p) => p.path === path) as Page;
/** A page's prose as the figures are looked for in it: one space for every run of white space. */
const flat = (text: string) => text.replace(/\s+/g, ' ');

const fill = (text: string, values: (string | number)[]) => {
  let i = 0;
  return text.replace(/\{\}/g, () => String(values[i++]));
};

it('the results say what the prose around them says: run E missing only one', () => {
  expect(
    T.map((_t, i) => i).filter((i) =>
      i >= 10 ? Math.abs(E.targets[i]) > bound(i) : i === 5 ? E.targets[i] !== 0 : E.targets[i] < bound(i),
    ),
  ).toEqual([11]);
});

it.each(figures.map(([path, text, ...values]) => [path, fill(text, values)]))('%s: %s', (path, text) => {
  expect(flat(page(path).text)).toContain(flat(text));
});

describe('a figure the run did not measure', () => {
  const NOT_MEASURED = 'not measured in this run';
  /** The cells of the row of a block's table that starts with `first`. */
  const row = (path: string, name: string, first: string) =>
    (docs.blockOf(page(path).text, name) ?? '')
      .split('\n')
      .find((line) => line.startsWith(`| ${first} |`))
      ?.slice(2, -2)
      .split(' | ');

  it.each(pairs.TARGETS.map((t) => [t.target, t]))(
    'bench/README.md, the target "%s": its value, or said not measured',
    (_name, t) => {
      const run = T.find((r) => r.target === t.target);
      const cells = row('bench/README.md', 'targets', t.target);
      if (!run || run.value === null) expect(cells?.[2]).toBe(NOT_MEASURED);
      else expect(cells?.[2]).not.toBe(NOT_MEASURED);
    },
  );

  it.each([
    ['redis', 'ioredis `Redis` (the default client)'],
    ['redis node-redis', 'node-redis `createClient`'],
    ['redis glide', 'Valkey GLIDE `GlideClient`'],
    ['redis cluster', 'ioredis `Cluster` of 3 masters, per master'],
    ['redis sliding of bare', "ioredis `Redis`, `window: 'sliding'`"],
  ])("docs/performance.md, the scale of the pair %s: Redis' CPU per request, or said not measured", (pair, client) => {
    const s = S[pair] as Json | undefined;
    const us = pair === 'redis cluster' ? s?.redis?.busiestUsPerRequest : s?.redis?.usPerRequest;
    const cells = row('docs/performance.md', 'clients', client);
    expect(cells?.[0]).toBe(client);
    expect(cells?.[1]).toBe(s ? `${f3(s.ratio)} (${s.rounds.map(f3).join(', ')})` : NOT_MEASURED);
    if (us === undefined) expect(cells?.slice(4).filter((c) => c === NOT_MEASURED)).toHaveLength(s?.redis ? 3 : 4);
    else
      expect(cells?.slice(4)).toEqual([
        f1(us),
        f2(s?.redis.perRequest),
        thousands(1e6 / us),
        f1(s?.cpuUsPerRequest / us),
      ]);
  });

  it('bench/README.md, the memory store without headers: its ratio, or said not measured', () => {
    const s = S['memory without headers'] as Json | undefined;
    expect(row('bench/README.md', 'moonshot', 'the memory store, `headers: false`')?.[1]).toBe(
      s ? `${f3(s.ratio)} (${s.rounds.map(f3).join(', ')})` : NOT_MEASURED,
    );
  });
});

describe('blocks made from the results', () => {
  const made = docs.blocks();

  it.each(Object.entries(made).flatMap(([path, named]) => Object.keys(named).map((name) => [path, name])))(
    '%s: <!-- bench:%s --> is what bench/docs.js makes of the results',
    (path, name) => {
      expect(docs.blockOf(page(path).text, name)).toBe((made[path] as Record<string, string[]>)[name]?.join('\n'));
    },
  );

  it('every page holds only blocks it makes', () => {
    const found = pages.flatMap(({ path, text }) =>
      [...text.matchAll(/^<!-- bench:([\w-]+) -->$/gm)].map(([, name]) => `${path} ${name}`),
    );
    const expected = Object.entries(made).flatMap(([path, named]) =>
      Object.keys(named).map((name) => `${path} ${name}`),
    );
    expect(found.sort()).toEqual(expected.sort());
  });
});

describe('no figure left unchecked', () => {
  /** Words around a number that are no measurement of the benchmark: an example of the ratio, a fixed interval. */
  const explained = [
    '1.00 costs the same as the reference; 0.80 means the variant spends 25% more CPU per request',
    "the runtime state's keys (`{runtime}`, the bans and grants that every instance reads every 250 ms",
    "**0** commands (besides the runtime state's reads every 250 ms)",
    // The memory store's moonshot, a goal and no measurement.
    'Toward 0.92 of bare',
    "The memory store's moonshot is 0.92 of bare Express",
    'neither 0.92 nor the target of 0.88 can be reached',
  ];
  /** A number that looks measured: with decimals, or with a unit of time, size or share (versions left out). */
  const measured = /(?<![\w.])\d[\d,]*(?:\.\d+)?(?:\s?(?:µs|ms|bytes|KiB|MiB|GiB|KB|MB|%))?(?![\w.])/g;
  const looksMeasured = (match: string) => /\.\d|µs|ms|bytes|[KMG]i?B|%/.test(match);

  it.each([
    ['README.md', '## Performance', '## Guides'],
    ['docs/performance.md', '# Performance', undefined],
  ])('%s, from %s: every measured figure is one the test reads', (path, from, to) => {
    let text = page(path).text;
    text = text.slice(text.indexOf(from), to === undefined ? undefined : text.indexOf(to));
    // The blocks, compared whole above; code and links, which hold no figure of the prose.
    text = text
      .replace(/<!-- bench:([\w-]+) -->[\s\S]*?<!-- \/bench:\1 -->/g, ' ')
      .replace(/```[\s\S]*?```/g, ' ')
      .replace(/\]\([^)]*\)/g, '] ');
    text = flat(text);
    const known = [
      ...figures.filter(([p]) => p === path).map(([, words, ...values]) => flat(fill(words, values))),
      ...explained,
    ];
    for (const words of known) text = text.split(words).join(' … ');
    // Versions (0.3.0, v20.20.2) are no figures.
    text = text.replace(/\d+\.\d+\.\d+/g, ' ');
    const unread = [...text.matchAll(measured)].map(([m]) => m).filter(looksMeasured);
    expect(unread).toEqual([]);
  });
});
