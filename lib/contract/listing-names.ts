// What a listing may be called (its letter, `B` or `b`, or what it lists, `bots`), and what a mistyped name means.
import { distance } from 'fastest-levenshtein';
import { type ListingName, listingFamilies, listingNames } from './listings.js';

const byName: ReadonlyMap<string, ListingName> = new Map(
  listingNames.flatMap((name) => [
    [name, name],
    [name.toLowerCase(), name],
    [listingFamilies[name], name],
  ]),
);

/** The listing a name means, as written (`'B'`, `'b'`, `'bots'`); undefined for anything else. */
export function listingOf(name: unknown): ListingName | undefined {
  return typeof name === 'string' ? byName.get(name) : undefined;
}

/** The listings' names as messages list them: `"A" or "servers", "B" or "bots"` (`quote` false: no quotes). */
export function listingChoices(quote = true): string {
  const q = (name: string) => (quote ? JSON.stringify(name) : name);
  return listingNames.map((name) => `${q(name)} or ${q(listingFamilies[name])}`).join(', ');
}

/** A hint for a mistyped listing name (`Did you mean \`bots\` (listing B)?`), or '' when it is close to none. */
export function listingHint(given: string): string {
  const word = given
    .trim()
    .toLowerCase()
    .replace(/^listing[\s_-]*/, '');
  if (word === '') return '';
  const letter = listingNames.find((name) => name.toLowerCase() === word);
  if (letter) return ` Did you mean \`${letter}\` (${listingFamilies[letter]})?`;
  let best: ListingName | undefined;
  let bestDistance = Infinity;
  for (const name of listingNames) {
    const family = listingFamilies[name];
    const d = distance(word, family);
    if (d > Math.floor(family.length / 3)) continue;
    if (d < bestDistance) [best, bestDistance] = [name, d];
    else if (d === bestDistance) best = undefined;
  }
  return best ? ` Did you mean \`${listingFamilies[best]}\` (listing ${best})?` : '';
}
