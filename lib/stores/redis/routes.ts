// Which node of a Redis Cluster holds a key: so that a master that fails stops only its own keys' requests waiting.
import calculateSlot from 'cluster-key-slot';

let lastKey: string | undefined;
let lastSlot = 0;

/** A key's slot, the last key's kept: a request asks for it up to three times (its route, its two commands). */
export function slotOf(key: string): number {
  if (key !== lastKey) {
    lastSlot = calculateSlot(key);
    lastKey = key;
  }
  return lastSlot;
}

/** A Cluster client as far as its slots are read: ioredis's table of slots, node-redis's master of a slot. */
interface ClusterLike {
  readonly isCluster?: unknown;
  readonly slots?: unknown;
  getSlotMaster?(slot: number): { host?: unknown; port?: unknown } | undefined;
  fcallWithRoute?: unknown;
}

/**
 * A Cluster client's route of each key: the master of its slot as the client knows it, else the slot (GLIDE does
 * not tell). Undefined for a client of one server: all its keys have one route.
 */
export function routesOf(client: unknown): ((redisKey: string) => string) | undefined {
  const c = client as ClusterLike;
  if (c.isCluster === true && Array.isArray(c.slots)) {
    return (key) => {
      const slot = slotOf(key);
      const nodes = (c.slots as unknown[])[slot];
      return Array.isArray(nodes) && typeof nodes[0] === 'string' ? nodes[0] : `slot ${slot}`;
    };
  }
  if (typeof c.getSlotMaster === 'function') {
    return (key) => {
      const slot = slotOf(key);
      try {
        const master = c.getSlotMaster?.(slot);
        if (master && typeof master.host === 'string') return `${master.host}:${String(master.port)}`;
      } catch {
        // A cluster that has not read its slots yet: the slot is the route.
      }
      return `slot ${slot}`;
    };
  }
  if (typeof c.fcallWithRoute === 'function') return (key) => `slot ${slotOf(key)}`;
  return undefined;
}
