// onRequestFiled: told once per grant request filed, on the instance that filed it, never the token; its errors go to onError.
import { type GrantRequest, listingLimits, ListingLimitsError, memoryStore } from '../lib';
import { tokenKey } from '../lib/contract/keys';
import { contactForm, pagesAppPerTest, rows, TOKEN, valid } from './helpers/pages';

const pagesApp = pagesAppPerTest();

/** Every key and every string of a value, however deep. */
function walk(value: unknown, keys: string[] = [], strings: string[] = []): { keys: string[]; strings: string[] } {
  if (typeof value === 'string') strings.push(value);
  else if (value instanceof Date) strings.push(value.toISOString());
  else if (value !== null && typeof value === 'object')
    for (const [key, inner] of Object.entries(value)) {
      keys.push(key);
      walk(inner, keys, strings);
    }
  return { keys, strings };
}

describe('onRequestFiled', () => {
  it('is told once per request the contact page files, as operators list it, with no token in it', async () => {
    const told: [GrantRequest, unknown][] = [];
    const { app, limits } = pagesApp(undefined, {
      limits: { onRequestFiled: (...args: unknown[]) => void told.push(args as [GrantRequest, unknown]) },
    });
    const file = await contactForm(app);
    const res = await file(valid).expect(303);
    const [listed] = await limits.requests.list();
    expect(told).toEqual([[listed, undefined]]);
    const [[request]] = told as [[GrantRequest, unknown]];
    expect(request).toEqual({
      id: expect.stringMatching(/^[\w-]{12}$/),
      key: tokenKey(TOKEN),
      network: 'ip:127.0.0.0/24',
      tokenEnd: '9f3a',
      ask: { multiplier: 10 },
      proof: { kind: 'bot', servers: 120000, shards: 120, link: 'https://example.com/bot' },
      contact: 'ops@example.com',
      reason: 'We serve a great many servers.',
      at: expect.any(Date),
      status: 'pending',
      decidedAt: undefined,
      granted: undefined,
      until: undefined,
      answer: undefined,
    });
    expect(res.headers.location).toBe(`/limits/request/status?id=${request.id}&filed=1`);
    const { keys, strings } = walk(request);
    expect(keys.filter((key) => /token/i.test(key) && key !== 'tokenEnd')).toEqual([]);
    expect(strings.filter((text) => text.includes(TOKEN) || text.includes('requester-token'))).toEqual([]);
    expect(JSON.stringify(request)).not.toContain('requester-token');
    // Refused forms and the limit of pending requests file nothing, and tell nothing.
    await file({ ...valid, servers: '' }).expect(400);
    await file(valid).expect(303);
    await file(valid).expect(429);
    expect(told).toHaveLength(2);
  });

  it.each([
    [
      'throws',
      () => {
        throw new Error('webhook down');
      },
    ],
    ['rejects', () => Promise.reject(new Error('webhook down'))],
  ])('that %s: the request is filed all the same, and onError is told, without a request', async (_how, hook) => {
    const errors: [unknown, unknown][] = [];
    const { app, limits } = pagesApp(undefined, {
      limits: { onRequestFiled: hook, onError: (error, req) => void errors.push([error, req]) },
    });
    await (await contactForm(app))(valid).expect(303);
    const filed = await limits.requests.file({
      token: 'Bot another-requester-token',
      ask: 'unlimited',
      proof: { kind: 'server', members: 5000, link: 'https://example.com/server' },
      contact: 'ops@example.com',
      reason: 'We serve many people.',
    });
    expect(filed.status).toBe('pending');
    await new Promise((resolve) => setImmediate(resolve));
    expect(errors).toEqual([
      [new Error('webhook down'), undefined],
      [new Error('webhook down'), undefined],
    ]);
    expect(await limits.requests.counts()).toEqual({ pending: 2, decided: 0 });
  });

  it('that never settles does not hold the filing', async () => {
    const { app } = pagesApp(undefined, { limits: { onRequestFiled: () => new Promise(() => {}) } });
    await (await contactForm(app))(valid).expect(303);
  });

  it('is told on the instance that filed, not on another sharing its store', async () => {
    const store = memoryStore();
    const a: GrantRequest[] = [];
    const b: GrantRequest[] = [];
    const one = pagesApp(undefined, { store, limits: { onRequestFiled: (r) => void a.push(r) } });
    pagesApp(undefined, { store, limits: { onRequestFiled: (r) => void b.push(r) } });
    await (await contactForm(one.app))(valid).expect(303);
    expect([a.length, b.length]).toEqual([1, 0]);
  });

  it('must be a function: else a coded error naming it', () => {
    expect(() => listingLimits(rows, { onRequestFiled: 'https://discord.com/api/webhooks/1/x' as never })).toThrow(
      expect.objectContaining({
        constructor: ListingLimitsError,
        code: 'ERR_INVALID_OPTION',
        field: 'options.onRequestFiled',
        message: expect.stringContaining('options.onRequestFiled must be a function (request) => void'),
      }),
    );
  });
});
