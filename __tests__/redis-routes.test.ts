// The slot of a Redis Cluster key, as the store's routes and its direct commands read it: cluster-key-slot's, whatever
// order the keys come in (the last key's slot is kept for the next call).
import calculateSlot from 'cluster-key-slot';
import { routesOf, slotOf } from '../lib/stores/redis/routes';

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

  it("names the master of the key's slot as an ioredis Cluster's table has it, and the slot where none is known", () => {
    const slots: string[][] = [];
    const known = KEYS[0] as string;
    slots[calculateSlot(known)] = ['127.0.0.1:7001', '127.0.0.1:7004'];
    const route = routesOf({ isCluster: true, slots });
    expect(route?.(known)).toBe('127.0.0.1:7001');
    expect(route?.('a{}b')).toBe(`slot ${calculateSlot('a{}b')}`);
    expect(route?.(known)).toBe('127.0.0.1:7001');
  });
});
