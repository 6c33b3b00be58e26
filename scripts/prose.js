#!/usr/bin/env node
// How long the manual's sentences are: prose outside code blocks, tables, headings and HTML comments.
// `node scripts/prose.js README.md docs/*.md` prints each file's lines, sentences, words per sentence and those over 40.
const { readFileSync } = require('node:fs');

const LONG = 40;

/** The sentences of a Markdown text, each as its words. A list item or a paragraph ends a sentence. */
function sentences(markdown) {
  const blocks = [];
  let block = [];
  let fenced = false;
  const end = () => {
    if (block.length > 0) blocks.push(block.join(' '));
    block = [];
  };
  for (const raw of markdown.replace(/<!--[\s\S]*?-->/g, '').split('\n')) {
    const line = raw.trim();
    if (/^(```|~~~)/.test(line)) {
      fenced = !fenced;
      end();
    } else if (fenced || line === '' || /^(#|\||<)/.test(line) || /^\[[^\]]+\]:/.test(line)) end();
    else {
      if (/^([-*+]|\d+\.)\s/.test(line)) end();
      block.push(line.replace(/^([-*+]|\d+\.|>)\s+/, ''));
    }
  }
  end();
  return blocks.flatMap((text) =>
    text
      .replace(/`[^`]*`/g, 'Code')
      .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
      .split(/(?<=[.!?])\s+(?=[A-Z`"'(*[0-9])/)
      .map((sentence) => sentence.split(/\s+/).filter((word) => /[\p{L}\p{N}]/u.test(word)))
      .filter((words) => words.length > 0),
  );
}

/** A file's figures: its lines, its sentences, words per sentence, and the sentences over 40 words. */
function measure(file) {
  const text = readFileSync(file, 'utf8');
  const all = sentences(text);
  const words = all.reduce((sum, sentence) => sum + sentence.length, 0);
  const long = all.filter((sentence) => sentence.length > LONG).map((sentence) => sentence.join(' '));
  return { file, lines: text.split('\n').length - 1, sentences: all.length, words, long };
}

module.exports = { measure, sentences, LONG };

if (require.main === module) {
  const files = process.argv.slice(2);
  const results = files.map(measure);
  const row = (name, r) =>
    `${name.padEnd(28)} ${String(r.lines).padStart(5)} lines ${String(r.sentences).padStart(5)} sentences ` +
    `${(r.words / Math.max(1, r.sentences)).toFixed(1).padStart(5)} words/sentence ${String(r.long.length).padStart(4)} over ${LONG}`;
  for (const r of results) console.log(row(r.file, r));
  const sum = (key) => results.reduce((total, r) => total + (Array.isArray(r[key]) ? r[key].length : r[key]), 0);
  if (results.length > 1) {
    console.log(
      row('total', {
        lines: sum('lines'),
        sentences: sum('sentences'),
        words: sum('words'),
        long: { length: sum('long') },
      }),
    );
  }
  if (process.env.LONG) for (const r of results) for (const s of r.long) console.log(`${r.file}: ${s}\n`);
}
