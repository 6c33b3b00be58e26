// The slot of a Redis Cluster key, as the store's routes and its direct commands read it: cluster-key-slot's, whatever
// order the keys come in (slots are remembered, up to 10,000 keys).
import calculateSlot from 'cluster-key-slot';
import { type RedisClient, redisStore } from '../lib';
import { slotOf } from '../lib/stores/redis/clients';

const KEYS = [
  'listing-limits:GET /v1/bots/:id:t:3mT0x9Q',
  'listing-limits:GET /v1/bots/:id:t:3mT0x9Q',
  'listing-limits:POST /v1/bots/:id/stats:t:3mT0x9Q',
  'listing-limits:GET /v1/bots/:id:t:3mT0x9Q',
  'listing-limits:limits:{ip:203.0.113.7}:f60',
  'listing-limits:limits:{ip:203.0.113.7}:f3600',
  'a{}b',
  '{}',
  'ключ',
  '',
  'listing-limits:GET /v1/bots/:id:t:3mT0x9Q',
];

describe('the slot of a Cluster key', () => {
  it("is cluster-key-slot's for each key of a sequence with repeats, alternations and hash tags", () => {
    expect(KEYS.map((key) => slotOf(key))).toEqual(KEYS.map((key) => calculateSlot(key)));
  });

  it('is right past the 10,000 keys it remembers, the first ones asked again once forgotten', () => {
    const keys = Array.from({ length: 10_050 }, (_, i) => `listing-limits:GET /v1/bots/:id:t:${i}`);
    const expected = keys.map((key) => calculateSlot(key));
    expect(keys.map((key) => slotOf(key))).toEqual(expected);
    expect(keys.map((key) => slotOf(key))).toEqual(expected);
  });

  it("names the master of the key's slot as an ioredis Cluster's table has it, and the slot where none is known", () => {
    const slots: string[][] = [];
    const known = KEYS[0] as string;
    slots[calculateSlot(known)] = ['127.0.0.1:7001', '127.0.0.1:7004'];
    // An ioredis Cluster as far as the store reads it: a limiter's route is its key's, `<prefix>:<name>:<key>`.
    const cluster = { isCluster: true, slots, nodes: () => [], defineCommand: () => {} };
    const limiter = redisStore(cluster as unknown as RedisClient, { prefix: 'listing-limits' })({
      name: 'GET /v1/bots/:id',
      limit: 1,
      windowMs: 60_000,
    });
    const { route } = limiter as unknown as { route(key: string): string };
    expect(route('t:3mT0x9Q')).toBe('127.0.0.1:7001');
    expect(route('a{}b')).toBe(`slot ${calculateSlot('listing-limits:GET /v1/bots/:id:a{}b')}`);
    expect(route('t:3mT0x9Q')).toBe('127.0.0.1:7001');
  });
});
