// The one formatter's width holds in lib/ everywhere, where Prettier leaves long strings and comments alone.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const root = join(__dirname, '..');
const { printWidth } = JSON.parse(readFileSync(join(root, '.prettierrc.json'), 'utf8')) as { printWidth: number };

it.each(readdirSync(join(root, 'lib'), { recursive: true, encoding: 'utf8' }).filter((name) => /\.c?ts$/.test(name)))(
  `lib/%s has no line longer than the configured width`,
  (name) => {
    const long = readFileSync(join(root, 'lib', name), 'utf8')
      .split('\n')
      .flatMap((line, i) => (line.length > printWidth ? [`${i + 1}: ${line.length}`] : []));
    expect(long).toEqual([]);
  },
);
