// The shape of every file in lib/: the one formatter's width holds, where Prettier leaves long strings and comments
// alone, no file grows past a length one can read through, and comments stay short.
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

/** A comment line: `//`, or a line of a `/* … *\/` block. */
function commentLines(text: readonly string[]): boolean[] {
  let inBlock = false;
  return text.map((line) => {
    const t = line.trim();
    if (inBlock) {
      if (t.includes('*/')) inBlock = false;
      return true;
    }
    if (t.startsWith('//')) return true;
    if (!t.startsWith('/*')) return false;
    inBlock = !t.includes('*/');
    return true;
  });
}

/** Each run of consecutive comment lines: its first line (1-based) and its length. */
function commentRuns(text: readonly string[]): { line: number; length: number }[] {
  const runs: { line: number; length: number }[] = [];
  commentLines(text).forEach((comment, i) => {
    const last = runs[runs.length - 1];
    if (!comment) return;
    if (last && last.line + last.length - 1 === i) last.length++;
    else runs.push({ line: i + 1, length: 1 });
  });
  return runs;
}

// Comments say why, in a line or two: a budget for all of lib/, so that prose cannot grow back over the code.
describe('the comments of lib/', () => {
  const texts = files.map((name) => [name, lines(name)] as const);

  it('are at most 0.15 lines per line of code', () => {
    let comments = 0;
    let code = 0;
    for (const [, text] of texts) {
      const marks = commentLines(text);
      comments += marks.filter(Boolean).length;
      code += text.filter((line, i) => !marks[i] && line.trim() !== '').length;
    }
    expect(comments / code).toBeLessThanOrEqual(0.15);
  });

  it('hold at most ten blocks of six lines or more', () => {
    const long = texts.flatMap(([name, text]) =>
      commentRuns(text)
        .filter((run) => run.length >= 6)
        .map((run) => `lib/${name}:${run.line} (${run.length} lines)`),
    );
    expect(long.length > 10 ? long : []).toEqual([]);
  });

  it.each(files)('lib/%s opens with at most three lines saying what it is', (name) => {
    const first = commentRuns(lines(name))[0];
    expect(first?.line === 1 ? first.length : 0).toBeLessThanOrEqual(3);
  });
});
