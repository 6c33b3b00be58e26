// The manual's facts are the code's: the limits tables are the data of `listings`, the options tables list every
// option of the public types, the example server's settings every variable it reads, the pages' headers and the
// HTTP samples and bodies are quoted as sent, and every relative link and anchor of README.md and docs/*.md leads
// somewhere.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import express from 'express';
import request from 'supertest';
import ts from 'typescript';
import { type EndpointRow, listingLimits, type ListingLimitsMiddleware, listings } from '../lib';
import { limitsRequestPage } from '../lib/pages';
import { startupFromEnv, storeFromEnv } from '../example-server/env';
import { listingHint } from '../lib/contract/listing-names';
import { tokenKey } from '../lib/contract/keys';
import { planVerification, verifyContract } from '../lib/verify';
import { serve } from './helpers/serve';
import {
  anchors,
  codeNames,
  entryPoints,
  fences,
  inlineCode,
  links,
  manual,
  type Page,
  root,
  tableRows,
} from './helpers/manual';
import { T0, useFakeClock } from './helpers/stores';

const pages = manual();
const flat = (text: string) => text.replace(/\s+/g, ' ');
const page = (path: string): Page => {
  const found = pages.find((p) => p.path === path);
  if (!found) throw new Error(`the manual has no page ${path}`);
  return found;
};

function duration(windowMs: number): string {
  const seconds = windowMs / 1000;
  const [n, unit] = seconds % 60 === 0 ? [seconds / 60, 'minute'] : [seconds, 'second'];
  return `${n} ${unit}${n === 1 ? '' : 's'}`;
}

it.each(['A', 'B'] as const)('README shows listing %s exactly as the data says', (listing) => {
  expect(tableRows(page('README.md'), `limits:${listing}`)).toEqual(
    listings[listing].map((r) => [r.method, `\`${r.path}\``, String(r.limit), duration(r.windowMs)]),
  );
});

it('quotes the hints of mistyped listing names as the code gives them', () => {
  const text = page('docs/middleware.md').text.replace(/\s+/g, ' ').replace(/\\`/g, '`');
  const quoted = [...text.matchAll(/`'([^'`]+)'`(?: and `'([^'`]+)'`)? gets? "(Did you mean [^"]+)"/g)];
  expect(quoted.length).toBeGreaterThan(1);
  for (const [, first, second, hint] of quoted) {
    for (const name of [first, second].filter((n): n is string => n !== undefined)) {
      expect([name, listingHint(name).trim()]).toEqual([name, hint]);
    }
  }
});

describe('what a verify run costs the server it probes, as the README says', () => {
  it.each(['A', 'B'] as const)(
    'listing %s: its length, and the refusals it draws with each window kind',
    async (name) => {
      const readme = flat(page('README.md').text);
      const seconds = planVerification({ baseUrl: 'http://127.0.0.1:1', listing: name }).waitMs / 1000;
      expect(readme).toContain(`${seconds} s for listing ${name}`);
      // The listing's limits in windows of 2 s (of 1 s where a limit of 1 needs no kind told), in real time: the
      // refusals are the server's, counted by the client it refused.
      const rows = listings[name].map((row) => ({ ...row, windowMs: row.limit === 1 ? 1000 : 2000 }));
      const token = 'Bot verify';
      const otherToken = 'Bot verify-other';
      for (const window of ['fixed', 'sliding'] as const) {
        const refused = new Map<string, number>();
        const limits = listingLimits(rows, {
          window,
          onLimit: (event) => refused.set(event.client.key, (refused.get(event.client.key) ?? 0) + 1),
        });
        const served = await serve(
          express()
            .use(limits)
            .use((_req, res) => res.json({})),
        );
        try {
          const report = await verifyContract({
            baseUrl: served.url,
            listing: rows,
            window,
            token,
            otherToken,
            graceMs: 300,
          });
          expect(report.endpoints.flatMap((e) => e.findings)).toEqual([]);
        } finally {
          limits.close();
          await served.close();
        }
        const [own, other] = [refused.get(tokenKey(token)) ?? 0, refused.get(tokenKey(otherToken)) ?? 0];
        const withParams = rows.filter((row) => row.path.includes(':')).length;
        const told =
          window === 'fixed'
            ? `listing ${name}: ${own + other} (${own} with its token, one per endpoint, and ${other} with the other, ` +
              'one per endpoint with a path parameter)'
            : `${own + other} on listing ${name} (${own} and ${other})`;
        expect([window, own, other]).toEqual([
          window,
          window === 'fixed' ? rows.length : rows.length + rows.filter((row) => row.limit > 1).length,
          withParams,
        ]);
        expect(readme).toContain(flat(told));
      }
    },
    60_000,
  );
});

describe('links', () => {
  const all = pages.flatMap(links);
  const external = /^(?:https?:|mailto:)/;

  it('finds them: the guides linked from the README, the README from every guide', () => {
    const targets = new Set(all.filter((l) => l.page === 'README.md').map((l) => l.target.split('#')[0]));
    for (const { path } of pages.filter((p) => p.path !== 'README.md')) {
      expect([path, targets.has(path)]).toEqual([path, true]);
      const back = all.filter((l) => l.page === path && l.target.startsWith('../README.md'));
      expect([path, back.length > 0]).toEqual([path, true]);
    }
  });

  it('every relative link leads to a file of the repository, and every #anchor to a heading of its page', () => {
    const broken = all.flatMap(({ page: from, line, target }) => {
      if (external.test(target)) return [];
      const [path = '', anchor] = target.split('#');
      const file = path === '' ? join(root, from) : join(root, dirname(from), decodeURIComponent(path));
      const at = `${from}:${line}: ${target}`;
      if (relative(root, file).startsWith('..')) return [`${at} leads out of the repository`];
      if (!existsSync(file)) return [`${at}: no such file`];
      if (anchor === undefined) return [];
      if (!file.endsWith('.md') || statSync(file).isDirectory()) return [`${at}: an anchor in a page that is no .md`];
      return anchors(readFileSync(file, 'utf8')).has(anchor) ? [] : [`${at}: no heading makes #${anchor}`];
    });
    expect(broken).toEqual([]);
    expect(all.filter((l) => !external.test(l.target)).length).toBeGreaterThan(100);
  });

  it('travels with the package: a relative link leads to a file it ships, a repository file is linked absolutely', () => {
    // The package's `files`, as npm reads them (package.json, README and LICENSE always ship).
    const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { files: string[] };
    const patterns = [...pkg.files, 'package.json', 'LICENSE'].map(
      (pattern) => new RegExp(`^${pattern.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[^/]*')}(?:/.*)?$`),
    );
    const shipped = (path: string) => patterns.some((pattern) => pattern.test(path));
    const repository = 'https://github.com/listing-limits/listing-limits/blob/main/';
    const image = /\.(?:png|svg|jpe?g|gif)$/;
    const problems = all.flatMap(({ page: from, line, target }) => {
      const at = `${from}:${line}: ${target}`;
      if (target.startsWith(repository)) {
        const path = target.slice(repository.length).split('#')[0] as string;
        if (!existsSync(join(root, path))) return [`${at}: no such file in the repository`];
        return shipped(path) ? [`${at}: a file the package ships, linked out of it`] : [];
      }
      if (external.test(target) || target.startsWith('#')) return [];
      const path = relative(root, join(root, dirname(from), decodeURIComponent(target.split('#')[0] as string)));
      // Images are shown from the repository by GitHub and npm's site; the package leaves out their weight.
      if (image.test(path)) return shipped(path) ? [`${at}: an image the package ships`] : [];
      return shipped(path) ? [] : [`${at}: not in the package: link ${repository}${path}`];
    });
    expect(problems).toEqual([]);
    expect(pages.every(({ path }) => shipped(path))).toBe(true);
  });

  it('every page lists its sections: each `##` heading is linked from the page itself', () => {
    const unlisted = pages.flatMap(({ path, text }) => {
      const listed = new Set(links({ path, text }).map((l) => l.target));
      return [
        ...anchors(
          text
            .split('\n')
            .filter((line) => /^## /.test(line))
            .join('\n'),
        ),
      ]
        .filter((anchor) => anchor !== 'contents' && !listed.has(`#${anchor}`))
        .map((anchor) => `${path}: #${anchor}`);
    });
    expect(unlisted).toEqual([]);
  });

  it('keeps the problem type `banned` under the README heading its URI points to', () => {
    expect(anchors(page('README.md').text)).toContain('problem-type-banned');
  });
});

describe('options tables', () => {
  /** The names of the properties of each type, read from the package's entry points as a user's compiler reads them. */
  function properties(types: Record<string, string>): Record<string, string[]> {
    const name = join(root, '__manual-types.ts');
    // A module's exported type by name, or a type expression when the module exports no name for it.
    const code = Object.entries(types)
      .map(([type, from]) =>
        from.includes('(')
          ? `export type ${type}_ = ${from};`
          : `import type { ${type} } from '${from}'; export type ${type}_ = ${type};`,
      )
      .join('\n');
    const options: ts.CompilerOptions = {
      strict: true,
      noEmit: true,
      skipLibCheck: true,
      module: ts.ModuleKind.ESNext,
      moduleResolution: ts.ModuleResolutionKind.Bundler,
      types: ['node'],
      paths: entryPoints,
    };
    const host = ts.createCompilerHost(options);
    const { fileExists, readFile, getSourceFile } = host;
    host.fileExists = (file) => file === name || fileExists.call(host, file);
    host.readFile = (file) => (file === name ? code : readFile.call(host, file));
    host.getSourceFile = (file, version, ...rest) =>
      file === name ? ts.createSourceFile(file, code, version, true) : getSourceFile.call(host, file, version, ...rest);
    const program = ts.createProgram([name], options, host);
    const checker = program.getTypeChecker();
    const source = program.getSourceFile(name) as ts.SourceFile;
    const exported = checker.getExportsOfModule(checker.getSymbolAtLocation(source) as ts.Symbol);
    return Object.fromEntries(
      Object.keys(types).map((type) => {
        const symbol = exported.find((s) => s.name === `${type}_`);
        if (!symbol) throw new Error(`no type ${type}`);
        const declared = checker.getDeclaredTypeOfSymbol(symbol);
        // A union of string literals (an error code) gives its members; an object type its properties.
        const names = declared.isUnion()
          ? declared.types.map((t) => (t.isStringLiteral() ? t.value : checker.typeToString(t)))
          : checker.getPropertiesOfType(declared).map((p) => p.name);
        return [type, names.sort()];
      }),
    );
  }

  const types = properties({
    ListingLimitsOptions: 'listing-limits',
    BanOptions: 'listing-limits',
    RedisStoreOptions: 'listing-limits',
    ListingLimitsErrorCode: 'listing-limits',
    ListingLimitsWarningCode: 'listing-limits',
    RuntimeStateErrorCode: 'listing-limits',
    ListingLimitsMiddleware: 'listing-limits',
    AdminPageOptions: 'listing-limits/pages',
    RequestPageOptions: 'listing-limits/pages',
    ListingClientOptions: 'listing-limits/client',
    ListingClientErrorCode: 'listing-limits/client',
    VerifyOptions: 'listing-limits/verify',
    ExampleAppOptions: "Parameters<typeof import('./example-server/app.js').createExampleApp>[0]",
  });
  const firstColumn = (path: string, table: string) =>
    tableRows(page(path), table)
      .flatMap(([first = '']) => codeNames(first))
      .sort();

  it.each([
    ['docs/middleware.md', 'ListingLimitsOptions'],
    ['docs/stores.md', 'RedisStoreOptions'],
    ['docs/pages.md', 'AdminPageOptions'],
    ['docs/pages.md', 'RequestPageOptions'],
    ['docs/client.md', 'ListingClientOptions'],
    ['docs/verify.md', 'VerifyOptions'],
    ['docs/example-server.md', 'ExampleAppOptions'],
  ])('%s lists every option of %s, and no other', (path, type) => {
    expect(firstColumn(path, `options:${type}`)).toEqual(types[type]);
  });

  it('docs/middleware.md names every field of `ban`', () => {
    const row = tableRows(page('docs/middleware.md'), 'options:ListingLimitsOptions').find(
      ([first]) => first === '`ban`',
    );
    const named = new Set(codeNames(row?.join(' ') ?? '').flatMap((code) => code.match(/\w+/g) ?? []));
    expect((types.BanOptions as string[]).filter((field) => !named.has(field))).toEqual([]);
  });

  it('docs/middleware.md has every ListingLimitsError code in its table, and no other', () => {
    expect(firstColumn('docs/middleware.md', 'error-codes')).toEqual(types.ListingLimitsErrorCode);
  });

  it('docs/middleware.md has every process warning the package emits in its table, and no other', () => {
    const sources = (dir: string): string[] =>
      readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
        entry.isDirectory()
          ? sources(join(dir, entry.name))
          : /\.c?ts$/.test(entry.name)
            ? [readFileSync(join(dir, entry.name), 'utf8')]
            : [],
      );
    const emitted = new Set(
      sources(join(root, 'lib')).flatMap((text) => text.match(/\bLISTING_LIMITS_[A-Z_]+/g) ?? []),
    );
    expect(firstColumn('docs/middleware.md', 'warning-codes')).toEqual([...emitted].sort());
    // Those told to onError too are the ListingLimitsWarning codes.
    const toOnError = tableRows(page('docs/middleware.md'), 'warning-codes')
      .filter((row) => row[2] === 'yes')
      .flatMap(([first = '']) => codeNames(first))
      .sort();
    expect(toOnError).toEqual(types.ListingLimitsWarningCode);
  });

  it.each([
    ['docs/middleware.md', 'RuntimeStateErrorCode'],
    ['docs/client.md', 'ListingClientErrorCode'],
    ['docs/middleware.md', 'ListingLimitsMiddleware'],
  ])('%s names every member of %s', (path, type) => {
    const named = new Set(inlineCode(page(path)).flatMap((code) => code.match(/\w+/g) ?? []));
    expect((types[type] as string[]).filter((member) => !named.has(member))).toEqual([]);
  });
});

describe("the example server's settings", () => {
  /** Every variable the example server reads at start-up, whatever the others say. */
  function variablesRead(): string[] {
    const read = new Set<string>();
    const recording = (env: Readonly<Record<string, string | undefined>>) =>
      new Proxy(env, {
        get: (target, name) => {
          if (typeof name === 'string') read.add(name);
          return target[name as string];
        },
      });
    for (const env of [{}, { LISTING: 'B' }]) startupFromEnv(recording(env));
    storeFromEnv(recording({}));
    return [...read].sort();
  }

  it('reads the environment only through startupFromEnv and storeFromEnv', () => {
    const main = readFileSync(join(root, 'example-server', 'main.ts'), 'utf8');
    expect(main.match(/process\.env\b.{0,1}/g)).toEqual(['process.env)', 'process.env)']);
    expect(main).toContain('startupFromEnv(process.env)');
    expect(main).toContain('storeFromEnv(process.env)');
  });

  it('docs/example-server.md lists every variable it reads, and no other', () => {
    const documented = tableRows(page('docs/example-server.md'), 'settings')
      .flatMap(([first = '']) => codeNames(first))
      .sort();
    expect(documented).toEqual(variablesRead());
    expect(documented).toContain('WINDOW');
  });
});

describe("the pages' headers", () => {
  let headers: Record<string, string>;
  let asset: Record<string, string>;
  beforeAll(async () => {
    const limits = listingLimits('B');
    const app = express().use('/limits/request', limitsRequestPage(limits));
    headers = (await request(app).get('/limits/request').expect(200)).headers as Record<string, string>;
    asset = (await request(app).get('/limits/request/assets/pages.css').expect(200)).headers as Record<string, string>;
    limits.close();
  });

  it('docs/security.md quotes every security header exactly as the contact page sends it', () => {
    const transport = ['content-type', 'content-length', 'etag', 'date', 'connection', 'set-cookie'];
    const sent = Object.entries(headers)
      .filter(([name]) => !transport.includes(name))
      .map(([name, value]) => [name, value])
      .sort();
    const quoted = tableRows(page('docs/security.md'), 'pages-headers')
      .map(([name = '', value = '']) => [codeNames(name)[0]?.toLowerCase(), codeNames(value)[0]])
      .sort();
    expect(quoted).toEqual(sent);
    expect(headers['strict-transport-security']).toBe('max-age=31536000; includeSubDomains');
    expect(headers['x-powered-by']).toBeUndefined();
  });

  it('the static files get the same headers, but are cached for an hour', () => {
    const same = (all: Record<string, string>) =>
      tableRows(page('docs/security.md'), 'pages-headers')
        .map(([name = '']) => (codeNames(name)[0] ?? '').toLowerCase())
        .filter((name) => name !== 'cache-control')
        .map((name) => [name, all[name]]);
    expect(same(asset)).toEqual(same(headers));
    expect(asset['cache-control']).toBe('public, max-age=3600');
    expect(page('docs/security.md').text).toContain('`public, max-age=3600`');
  });
});

describe("the manual's answers are the middleware's, at 2026-01-01T00:00:00Z", () => {
  let made: ListingLimitsMiddleware[] = [];
  const limiter = (...args: Parameters<typeof listingLimits>) => {
    const limits = listingLimits(...args);
    made.push(limits);
    return limits;
  };
  beforeEach(useFakeClock);
  afterEach(() => {
    for (const limits of made) limits.close();
    made = [];
    jest.useRealTimers();
  });

  const bursts: readonly EndpointRow[] = [
    { method: 'GET', path: '/v1/bots', limit: 2, windowMs: 1000 },
    { method: 'GET', path: '/v1/bots', limit: 3, windowMs: 10_000 },
  ];
  /** Each HTTP sample of the manual, by its first line: the app, and the requests of which the last one answers it. */
  const cases: Record<string, { app: () => express.Express; path: string; requests: number; token?: string }> = {
    'RateLimit-Policy: "GET /v1/bots";q=25;w=60': {
      app: () => express().use(limiter('B')),
      path: '/v1/bots',
      requests: 1,
    },
    'RateLimit-Policy: "GET /v1/bots/:botId";q=3;w=60, "GET /v1/bots/:id";q=2;w=1': {
      app: () =>
        express()
          .use(limiter([{ method: 'GET', path: '/v1/bots/:botId', limit: 3, windowMs: 60_000 }]))
          .use(limiter('B')),
      path: '/v1/bots/1',
      requests: 1,
    },
    'RateLimit-Policy: "GET /v1/bots per 1s";q=2;w=1, "GET /v1/bots per 10s";q=3;w=10': {
      app: () => express().use(limiter(bursts)),
      path: '/v1/bots',
      requests: 2,
    },
    'RateLimit-Policy: "GET /v1/bots/:id (x10)";q=20;w=1': {
      app: () => express().use(limiter('B', { grants: { 'Bot partner-token': { multiplier: 10 } } })),
      path: '/v1/bots/1',
      requests: 1,
      token: 'Bot partner-token',
    },
  };
  const samples = pages.flatMap(fences).filter((fence) => fence.lang === 'http');

  it('has a case for every HTTP sample', () => {
    expect(samples.map((fence) => fence.code.split('\n')[0]).sort()).toEqual(Object.keys(cases).sort());
  });

  it.each(samples.map((fence) => [`${fence.page}:${fence.line}`, fence] as const))('%s', async (_at, fence) => {
    const { app, path, requests, token } = cases[fence.code.split('\n')[0] as string] ?? {};
    if (!app || !path || !requests) throw new Error('no case');
    const server = app();
    let res: request.Response | undefined;
    for (let i = 0; i < requests; i++) {
      const req = request(server).get(path);
      res = await (token ? req.set('Authorization', token) : req);
    }
    const lines = fence.code.trimEnd().split('\n');
    expect(
      lines.map((line) => `${line.slice(0, line.indexOf(':'))}: ${res?.get(line.slice(0, line.indexOf(':')))}`),
    ).toEqual(lines);
  });

  it('the bodies of a refusal and of a ban, as docs/middleware.md and the README quote them', async () => {
    const limits = limiter('B');
    const app = express().use(limits);
    const guide = page('docs/middleware.md').text;
    for (let i = 0; i < 25; i++) await request(app).get('/v1/bots');
    jest.setSystemTime(T0 + 18_000);
    const refused = await request(app).get('/v1/bots').expect(429);
    expect(guide).toContain(`\n${refused.text}\n`);
    expect(refused.text).toContain('"retryAfter":42');

    for (let i = 0; i < 3; i++) await request(app).get('/v1/bots/1').set('Accept', 'application/problem+json');
    const problem = await request(app).get('/v1/bots/1').set('Accept', 'application/problem+json').expect(429);
    expect(guide).toContain(`\n${problem.text}\n`);

    jest.setSystemTime(T0);
    await limits.ban({ token: 'Bot scraper-token' }, { duration: 600_000 });
    for (const accept of ['application/json', 'application/problem+json']) {
      const banned = await request(app).get('/v1/bots').set('Authorization', 'Bot scraper-token').set('Accept', accept);
      expect([banned.status, banned.get('Retry-After')]).toEqual([403, '600']);
      expect(page('README.md').text).toContain(`\n${banned.text}\n`);
    }
  });
});
