// HTML built from templates whose every interpolated value is escaped, unless it is already HTML built here.

const ESCAPES: Readonly<Record<string, string>> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

/** Text as HTML text or as a quoted attribute value: `& < > " '` replaced by their entities. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c] as string);
}

/** HTML made by {@link markup}, or trusted by the page's own code: inserted as it is. */
export class Html {
  constructor(readonly text: string) {}

  toString(): string {
    return this.text;
  }
}

/** Null, undefined and booleans print nothing. */
export type Part = Html | string | number | boolean | null | undefined | readonly Part[];

function render(part: Part): string {
  if (part instanceof Html) return part.text;
  if (Array.isArray(part)) return part.map(render).join('');
  if (part === null || part === undefined || part === false || part === true) return '';
  return escapeHtml(String(part));
}

export function markup(strings: TemplateStringsArray, ...parts: Part[]): Html {
  let out = strings[0] as string;
  for (let i = 0; i < parts.length; i++) out += render(parts[i] as Part) + (strings[i + 1] as string);
  return new Html(out);
}

export function page(title: string, body: Html, assets: string): string {
  return markup`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <meta name="referrer" content="same-origin" />
        <title>${title}</title>
        <link rel="stylesheet" href="${assets}/pages.css" />
        <script src="${assets}/pages.js" defer></script>
      </head>
      <body>
        <main>
          <h1>${title}</h1>
          ${body}
        </main>
      </body>
    </html> `.text;
}
