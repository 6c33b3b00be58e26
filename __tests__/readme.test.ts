// The README's limits tables are the data of lib/listings.ts, word for word.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type ListingName, listings } from '../lib';

function duration(windowMs: number): string {
  const seconds = windowMs / 1000;
  const [n, unit] = seconds % 60 === 0 ? [seconds / 60, 'minute'] : [seconds, 'second'];
  return `${n} ${unit}${n === 1 ? '' : 's'}`;
}

function table(listing: ListingName): string {
  const rows = listings[listing].map((r) => `| ${r.method} | \`${r.path}\` | ${r.limit} | ${duration(r.windowMs)} |`);
  return ['| Method | Path | Requests | Window |', '|---|---|---|---|', ...rows].join('\n');
}

const readme = readFileSync(join(__dirname, '..', 'README.md'), 'utf8');

it.each(['A', 'B'] as const)('README shows listing %s exactly as the data says', (listing) => {
  const between = new RegExp(`<!-- limits:${listing} -->\\n([\\s\\S]*?)\\n<!-- /limits:${listing} -->`).exec(readme);
  expect(between?.[1]).toBe(table(listing));
});
