// The Node.js versions the package claims are the ones CI tests: `engines` names exactly the majors that
// scripts/node-versions.json pins, `.ci/run` runs the suite on each of them, docs/install.md says so, and @types/node is the lowest.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const root = join(__dirname, '..');
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
  engines: { node: string };
  devDependencies: Record<string, string>;
  scripts: Record<string, string>;
};
const VERSIONS = JSON.parse(readFileSync(join(root, 'scripts', 'node-versions.json'), 'utf8')) as Record<
  string,
  string
>;
const majors = Object.keys(VERSIONS);
const ci = readFileSync(join(root, '.ci', 'run'), 'utf8');
const ciVersions = (name: string) =>
  ci
    .match(new RegExp(`^${name}="([\\d ]*)"$`, 'm'))?.[1]
    ?.split(' ')
    .filter(Boolean) ?? [];

it('pins one exact version of each major, and no major below 22', () => {
  expect(majors).toEqual(['22', '24', '26']);
  for (const [major, version] of Object.entries(VERSIONS))
    expect(version).toMatch(new RegExp(`^${major}\\.\\d+\\.\\d+$`));
});

it('engines names exactly those majors', () => {
  expect(pkg.engines.node).toBe(majors.join(' || '));
});

it('.ci/run runs the whole suite on every one of them', () => {
  expect(ciVersions('FULL')).toEqual(majors);
  expect(ciVersions('FAST')).toEqual([]);
});

it('has one npm script per version, and @types/node of the lowest', () => {
  for (const major of majors) expect(pkg.scripts[`test:node${major}`]).toBe(`node scripts/node.js ${major} jest`);
  expect(pkg.devDependencies['@types/node']).toMatch(new RegExp(`^\\^${majors[0]}\\.`));
});

it('docs/install.md says which versions are tested, as .ci/run runs them', () => {
  const install = readFileSync(join(root, 'docs', 'install.md'), 'utf8').replace(/\s+/g, ' ');
  expect(install).toContain(
    `Node.js 22, 24 and 26 (\`engines\`: \`${pkg.engines.node}\`): CI runs the whole suite on each.`,
  );
  const readme = readFileSync(join(root, 'README.md'), 'utf8');
  expect(readme).toContain(`Node.js ${majors.slice(0, -1).join(', ')} or ${majors.at(-1)}.`);
});
