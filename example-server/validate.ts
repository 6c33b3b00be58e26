// Validation of what clients send: the stats body of `POST /v1/bots/:id` and `?page=`. A 400 naming the field, or the clean value.
import { closest } from 'fastest-levenshtein';
import { type BotStats, shardsFor } from './data.js';
import { HttpError } from './errors.js';

const FIELDS = ['server_count', 'shard_count', 'shards'];
const MAX_SHARDS = 10_000;
const EXAMPLE = '{"server_count": 1234, "shards": [600, 634]}';

/** A value as it appears in a message: JSON, cut short. */
function shown(value: unknown): string {
  const text = value === undefined ? 'nothing' : JSON.stringify(value);
  return text.length > 40 ? `${text.slice(0, 37)}...` : text;
}

function badRequest(field: string, message: string): never {
  throw new HttpError(400, `${field} ${message}`);
}

function isCount(value: unknown, min: number): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= min;
}

function count(value: unknown, field: string, min: number): number {
  if (!isCount(value, min)) badRequest(field, `must be a whole number of ${min} or more; got ${shown(value)}.`);
  return value;
}

/**
 * The stats of a POST body: `server_count` (required), `shards` (each shard's server count, adding up to
 * `server_count`) and `shard_count` (equal to the length of `shards` when both are given). Without
 * `shards` the per-shard counts are unknown and stored empty.
 */
export function parseStats(body: unknown, now: Date): BotStats {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    badRequest('body', `must be a JSON object sent with Content-Type: application/json, such as ${EXAMPLE}.`);
  }
  for (const key of Object.keys(body)) {
    if (!FIELDS.includes(key)) badRequest(`body.${key}`, `is not a field. Did you mean \`${closest(key, FIELDS)}\`?`);
  }
  const fields = body as Record<string, unknown>;
  if (fields.server_count === undefined) {
    badRequest('body.server_count', `is required: the number of servers the bot is in, as in ${EXAMPLE}.`);
  }
  const server_count = count(fields.server_count, 'body.server_count', 0);
  const shardCount = fields.shard_count === undefined ? undefined : count(fields.shard_count, 'body.shard_count', 1);

  let shards: number[] = [];
  if (fields.shards !== undefined) {
    const list = fields.shards;
    if (!Array.isArray(list) || list.length === 0 || list.length > MAX_SHARDS) {
      badRequest(
        'body.shards',
        `must be an array of 1 to ${MAX_SHARDS} server counts, one per shard; got ${shown(list)}.`,
      );
    }
    shards = list.map((value, i) => count(value, `body.shards[${i}]`, 0));
    const total = shards.reduce((a, b) => a + b, 0);
    if (total !== server_count) {
      badRequest('body.shards', `adds up to ${total} servers, but body.server_count is ${server_count}.`);
    }
    if (shardCount !== undefined && shardCount !== shards.length) {
      badRequest('body.shard_count', `is ${shardCount}, but body.shards lists ${shards.length} shards.`);
    }
  }
  return {
    server_count,
    shard_count: shardCount ?? (shards.length || shardsFor(server_count)),
    shards,
    stats_updated_at: now.toISOString(),
  };
}

/** `?page=`: absent means 1; otherwise one whole number from 1. */
export function parsePage(value: unknown): number {
  if (value === undefined) return 1;
  if (typeof value !== 'string' || !/^[1-9]\d{0,8}$/.test(value)) {
    badRequest('page', `must be a whole number from 1 (?page=2); got ${shown(value)}.`);
  }
  return Number(value);
}
