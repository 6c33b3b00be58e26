// The manual as its tests read it: README.md and the guides of docs/, their code samples, headings, links and tables.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import ts from 'typescript';

export const root = join(__dirname, '..', '..');

/**
 * The package's entry points as the samples import them, mapped to their sources (the compiler's `paths`), so that the
 * samples compile against the published types without a build.
 */
export const entryPoints: Readonly<Record<string, string[]>> = {
  'listing-limits': [join(root, 'lib', 'index.ts')],
  'listing-limits/verify': [join(root, 'lib', 'verify.ts')],
  'listing-limits/client': [join(root, 'lib', 'client.ts')],
  'listing-limits/pages': [join(root, 'lib', 'pages.ts')],
};

/** One page of the manual: its path from the repository's root (`README.md`, `docs/stores.md`) and its text. */
export interface Page {
  readonly path: string;
  readonly text: string;
}

/** README.md, then every guide of docs/, by name. */
export function manual(): Page[] {
  const guides = readdirSync(join(root, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .sort()
    .map((name) => `docs/${name}`);
  return ['README.md', ...guides].map((path) => ({ path, text: readFileSync(join(root, path), 'utf8') }));
}

/** A fenced code block: its language (`''` when it names none), its code, and the names its prelude comment gives. */
export interface Fence {
  readonly page: string;
  /** The line of the opening fence, from 1. */
  readonly line: number;
  readonly lang: string;
  readonly code: string;
  /** `<!-- ts-prelude: app pool -->` on the line before the fence: `['app', 'pool']`. */
  readonly prelude: readonly string[];
}

export function fences(page: Page): Fence[] {
  const lines = page.text.split('\n');
  const found: Fence[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\S*)$/.exec(lines[i] as string);
    if (!open) continue;
    const end = lines.findIndex((line, j) => j > i && line === '```');
    if (end < 0) throw new Error(`${page.path}:${i + 1}: a code fence that is never closed`);
    const prelude = /^<!-- ts-prelude:([^>]*)-->$/.exec(lines[i - 1] ?? '');
    found.push({
      page: page.path,
      line: i + 1,
      lang: open[1] as string,
      code: lines.slice(i + 1, end).join('\n') + '\n',
      prelude: (prelude?.[1] ?? '').trim().split(/\s+/).filter(Boolean),
    });
    i = end;
  }
  return found;
}

/** The page's text outside its code fences and inline code spans, where links and headings are. */
function prose(text: string): string[] {
  let inFence = false;
  return text.split('\n').map((line) => {
    if (/^```/.test(line)) {
      inFence = !inFence;
      return '';
    }
    return inFence ? '' : line;
  });
}

/**
 * The anchors GitHub (and npm) give the page's headings: the heading's text, lower case, without the characters
 * that are neither letters, digits, `_`, `-` nor spaces, spaces made `-`; a repeated one gets `-1`, `-2`, ….
 */
export function anchors(text: string): Set<string> {
  const seen = new Map<string, number>();
  const found = new Set<string>();
  for (const line of prose(text)) {
    const heading = /^#{1,6} (.*)$/.exec(line);
    if (!heading) continue;
    const words = (heading[1] as string).replace(/\[([^\]]*)\]\([^)]*\)/g, '$1');
    const slug = words
      .toLowerCase()
      .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
      .replace(/ /g, '-');
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    found.add(count === 0 ? slug : `${slug}-${count}`);
  }
  return found;
}

/** A link of the page's prose, `[text](target)` or `![alt](target)`, with its line. */
interface Link {
  readonly page: string;
  readonly line: number;
  readonly target: string;
}

export function links(page: Page): Link[] {
  const found: Link[] = [];
  // Links may break across lines in their text: join the prose, and count the lines before each match.
  const text = prose(page.text)
    .join('\n')
    .replace(/\\`/g, '  ')
    .replace(/`[^`]*`/g, (code) => code.replace(/[^\n]/g, ' '));
  for (const match of text.matchAll(/\]\(([^)\s]+)\)/g)) {
    const line = text.slice(0, match.index).split('\n').length;
    found.push({ page: page.path, line, target: match[1] as string });
  }
  return found;
}

/** The cells of each body row of the table between `<!-- name -->` and `<!-- /name -->` on a page. */
export function tableRows(page: Page, name: string): string[][] {
  const escaped = name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const between = new RegExp(`<!-- ${escaped} -->\\n([\\s\\S]*?)\\n<!-- /${escaped} -->`).exec(page.text);
  if (!between?.[1]) throw new Error(`${page.path} has no table between <!-- ${name} --> markers`);
  return between[1]
    .split('\n')
    .slice(2) // after the header row and the separator
    .map((line) =>
      // Split on the pipes that are not escaped (`\|` within a cell).
      line
        .split(/(?<!\\)\|/)
        .slice(1, -1)
        .map((cell) => cell.replace(/\\\|/g, '|').trim()),
    );
}

/** The inline code spans of a page's prose (outside its code fences), as written: `` `ban()` `` gives `ban()`. */
export const inlineCode = (page: Page): string[] =>
  prose(page.text)
    .join('\n')
    .replace(/\\`/g, '')
    .match(/`[^`]+`/g)
    ?.map((code) => code.slice(1, -1)) ?? [];

/** The names in backticks of a table cell: `` `token`, `otherToken` `` gives `['token', 'otherToken']`. */
export const codeNames = (cell: string): string[] => [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1] as string);

/**
 * The sample as the file a user would run, written in `dir`: TypeScript compiled to an ES module, the package's names
 * resolved to its build in `built` (helpers/compiled.ts).
 */
export function programOf(fence: Fence, built: string, dir: string): string {
  const commonJs = fence.lang === 'js' && /\brequire\(/.test(fence.code);
  const code =
    fence.lang === 'ts'
      ? ts.transpileModule(fence.code, {
          compilerOptions: {
            module: ts.ModuleKind.ESNext,
            target: ts.ScriptTarget.ES2022,
            verbatimModuleSyntax: true,
          },
        }).outputText
      : fence.code;
  const entry = (name: string) => pathToFileURL(join(built, 'lib', `${name}.js`)).href;
  const resolved = code
    .replace(/(['"])listing-limits(?:\/(client|verify|pages))?\1/g, (_m, q: string, sub?: string) =>
      commonJs ? `${q}${fileURLToPath(entry(sub ?? 'index'))}${q}` : `${q}${entry(sub ?? 'index')}${q}`,
    )
    .replace(/'\.\/example-server\/app\.js'/g, `'${pathToFileURL(join(built, 'example-server', 'app.js')).href}'`);
  const file = join(dir, `${fence.page.replace('/', '--')}-line-${fence.line}.${commonJs ? 'cjs' : 'mjs'}`);
  writeFileSync(file, resolved);
  return file;
}
