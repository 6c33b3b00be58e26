// The README's limits tables are the data of lib/contract/listings.ts, row for row.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { listings } from '../lib';

function duration(windowMs: number): string {
  const seconds = windowMs / 1000;
  const [n, unit] = seconds % 60 === 0 ? [seconds / 60, 'minute'] : [seconds, 'second'];
  return `${n} ${unit}${n === 1 ? '' : 's'}`;
}

const readme = readFileSync(join(__dirname, '..', 'README.md'), 'utf8');

/** The cells of each body row of the table between `<!-- limits:X -->` and `<!-- /limits:X -->`. */
function readmeRows(listing: string): string[][] {
  const between = new RegExp(`<!-- limits:${listing} -->\\n([\\s\\S]*?)\\n<!-- /limits:${listing} -->`).exec(readme);
  if (!between?.[1]) throw new Error(`README has no table between <!-- limits:${listing} --> markers`);
  const lines = between[1].split('\n').slice(2); // after the header row and the separator
  return lines.map((line) =>
    line
      .split('|')
      .slice(1, -1)
      .map((cell) => cell.trim()),
  );
}

it.each(['A', 'B'] as const)('README shows listing %s exactly as the data says', (listing) => {
  expect(readmeRows(listing)).toEqual(
    listings[listing].map((r) => [r.method, `\`${r.path}\``, String(r.limit), duration(r.windowMs)]),
  );
});
