// The manual reads in short sentences (scripts/prose.js): a README a newcomer reads in minutes, guides of one fact a sentence.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';

const root = join(__dirname, '..');

type Measured = { lines: number; sentences: number; words: number; long: string[] };
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { measure } = require('../scripts/prose.js') as { measure(file: string): Measured };

it('README.md: at most 250 lines, 16 words a sentence on average, 2 sentences over 40 words', () => {
  const { lines, sentences, words, long } = measure(join(root, 'README.md'));
  expect(lines).toBeLessThanOrEqual(250);
  expect(words / sentences).toBeLessThanOrEqual(16);
  expect(long.slice(2)).toEqual([]);
});

it('docs/: at most 16 words a sentence on average, 10 sentences over 40 words', () => {
  const pages = readdirSync(join(root, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => measure(join(root, 'docs', name)));
  const sum = (of: (page: Measured) => number) => pages.reduce((total, page) => total + of(page), 0);
  expect(sum((page) => page.words) / sum((page) => page.sentences)).toBeLessThanOrEqual(16);
  expect(pages.flatMap((page) => page.long).slice(10)).toEqual([]);
});
