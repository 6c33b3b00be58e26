// The shape of every file in lib/: the one formatter's width holds, where Prettier leaves long strings and comments
// alone, and no file grows past a length one can read through.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const root = join(__dirname, '..');
const { printWidth } = JSON.parse(readFileSync(join(root, '.prettierrc.json'), 'utf8')) as { printWidth: number };
/** The most lines a file of lib/ may have: a longer one holds more than one thing, and is split by what it holds. */
const MAX_LINES = 500;

const files = readdirSync(join(root, 'lib'), { recursive: true, encoding: 'utf8' }).filter((name) =>
  /\.c?ts$/.test(name),
);
const lines = (name: string) =>
  readFileSync(join(root, 'lib', name), 'utf8')
    .replace(/\n$/, '')
    .split('\n');

const rules: readonly [string, (text: readonly string[]) => string[]][] = [
  [
    `no line longer than the configured width (${printWidth})`,
    (text) => text.flatMap((line, i) => (line.length > printWidth ? [`${i + 1}: ${line.length}`] : [])),
  ],
  [`at most ${MAX_LINES} lines`, (text) => (text.length > MAX_LINES ? [`${text.length} lines`] : [])],
];

describe.each(rules)('every file of lib/ has %s', (_rule, problems) => {
  it.each(files)('lib/%s', (name) => {
    expect(problems(lines(name))).toEqual([]);
  });
});
