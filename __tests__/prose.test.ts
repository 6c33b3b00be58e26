// The manual reads in short sentences (scripts/prose.js): a README a newcomer reads in minutes, guides of one fact a sentence.
import { join } from 'node:path';
import { root } from './helpers/manual';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { measure } = require('../scripts/prose.js') as {
  measure(file: string): { lines: number; sentences: number; words: number; long: string[] };
};

it.each([
  ['README.md', { lines: 250, average: 16, long: 2 }],
  ['docs/performance.md', { lines: Infinity, average: 16, long: 0 }],
  ['docs/middleware.md', { lines: Infinity, average: 16, long: 0 }],
])('%s: at most %o', (file, most) => {
  const { lines, sentences, words, long } = measure(join(root, file));
  expect(lines).toBeLessThanOrEqual(most.lines);
  expect(words / sentences).toBeLessThanOrEqual(most.average);
  expect(long.slice(most.long)).toEqual([]);
});
