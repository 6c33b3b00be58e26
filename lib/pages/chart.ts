// The last hour as a chart drawn on the server: allowed and refused requests per minute, in SVG (no script, no style).
import type { TrafficMinute } from '../limiter/types.js';
import { countText } from './describe.js';
import { type Html, markup } from './html.js';

/** The hour `traffic()` keeps. */
const BARS = 60;
/** In the SVG's units: a slot and a bar per minute, a plot, margins. */
const SLOT = 13;
const BAR = 9;
const LEFT = 64;
const TOP = 40;
const PLOT = 200;
const WIDTH = LEFT + BARS * SLOT + 24;
const HEIGHT = TOP + PLOT + 50;
/** The widest character of the legend (digits of a wide sans-serif at 13 px). */
const CHAR = 8;
const ALLOWED = '#2f6fdb';
const REFUSED = '#b3261e';
const INK = '#1b1b1b';
const MUTED = '#4a4f57';
const GRID = '#d8dbe0';

/** Anything but a whole number up to the largest safe integer (NaN, below 0) is 0. */
function countOf(n: number): number {
  return n > 0 ? Math.min(Math.floor(n), Number.MAX_SAFE_INTEGER) : 0;
}

/** `750`, `1.5K`, `2M`. */
const short = new Intl.NumberFormat('en-US', { notation: 'compact', maximumFractionDigits: 1 });

/** A step of 1, 2 or 5 times a power of ten (1 at the least), and at most 4 steps to the top. */
export function scaleOf(most: number): { top: number; step: number } {
  const raw = most / 4;
  let step = 1;
  if (raw > 1) {
    const power = 10 ** Math.floor(Math.log10(raw));
    step = ([1, 2, 5, 10].find((m) => m * power >= raw) ?? 10) * power;
  }
  return { top: Math.max(Math.ceil(most / step), 1) * step, step };
}

/** A count above 0 is 1 high at the least. */
function heights(allowed: number, refused: number, top: number): [number, number] {
  const size = (n: number) => Math.round((PLOT * n) / top);
  let low = size(allowed);
  let high = size(allowed + refused);
  if (allowed > 0 && low === 0) low = 1;
  if (refused > 0 && high <= low) high = low + 1;
  if (high > PLOT) [low, high] = [low - (high - PLOT), PLOT];
  return [low, high - low];
}

function centred(x: number, y: number, text: string, more: Html | '' = ''): Html {
  return markup`<text x="${x}" y="${y}" text-anchor="middle"${more}>${text}</text>`;
}
const muted = markup` fill="${MUTED}"`;

const clock = (at: Date) => at.toISOString().slice(11, 16);

function minuteBars(m: TrafficMinute, i: number, top: number): Html {
  const [allowed, refused] = [countOf(m.allowed), countOf(m.refused)];
  const [low, high] = heights(allowed, refused, top);
  const x = LEFT + i * SLOT;
  const base = TOP + PLOT;
  const bar = (y: number, height: number, fill: string) =>
    height > 0
      ? markup`<rect x="${x + (SLOT - BAR) / 2}" y="${y}" width="${BAR}" height="${height}" fill="${fill}"/>`
      : '';
  const title = `${clock(m.at)} UTC: ${countText(allowed)} allowed, ${countText(refused)} refused`;
  // The tooltip shows over a minute of few requests too.
  const slot = markup`<rect x="${x}" y="${TOP}" width="${SLOT}" height="${PLOT}" fill="transparent"/>`;
  const bars = markup`${bar(base - low, low, ALLOWED)}${bar(base - low - high, high, REFUSED)}`;
  const data = markup`data-at="${m.at.toISOString()}" data-allowed="${allowed}" data-refused="${refused}"`;
  return markup`<g ${data}><title>${title}</title>${slot}${bars}</g>`;
}

function grid(top: number, step: number): Html[] {
  const lines: Html[] = [];
  for (let k = 0; k * step <= top; k++) {
    const y = TOP + PLOT - Math.round((PLOT * k * step) / top);
    lines.push(
      markup`<line x1="${LEFT}" y1="${y}" x2="${LEFT + BARS * SLOT}" y2="${y}" stroke="${k === 0 ? MUTED : GRID}"/>`,
      markup`<text x="${LEFT - 8}" y="${y + 4}" text-anchor="end">${short.format(k * step)}</text>`,
    );
  }
  return lines;
}

function times(minutes: readonly TrafficMinute[]): Html[] {
  const base = TOP + PLOT;
  return minutes.flatMap((m, i) => {
    if (m.at.getUTCMinutes() % 10 !== 0) return [];
    const x = LEFT + i * SLOT + SLOT / 2;
    return [
      markup`<line x1="${x}" y1="${base}" x2="${x}" y2="${base + 5}" stroke="${MUTED}"/>`,
      centred(x, base + 19, clock(m.at)),
    ];
  });
}

/** Of the last 60 minutes at the most, so that its size is bounded. */
export function trafficChart(subject: string, minutes: readonly TrafficMinute[]): Html {
  const shown = minutes.slice(-BARS);
  const allowed = countText(shown.reduce((n, m) => n + countOf(m.allowed), 0));
  const refused = countText(shown.reduce((n, m) => n + countOf(m.refused), 0));
  const most = Math.max(0, ...shown.map((m) => countOf(m.allowed) + countOf(m.refused)));
  const { top, step } = scaleOf(most);
  const [center, middle] = [LEFT + (BARS * SLOT) / 2, TOP + PLOT / 2];
  const title = `${subject}: ${allowed} allowed and ${refused} refused in the last hour, per minute`;
  const second = LEFT + 18 + `allowed: ${allowed}`.length * CHAR + 24;
  const lines = [
    markup`<title id="traffic-title">${title}</title>`,
    markup`<rect x="${LEFT}" y="8" width="12" height="12" fill="${ALLOWED}"/>`,
    markup`<text x="${LEFT + 18}" y="19">allowed: ${allowed}</text>`,
    markup`<rect x="${second}" y="8" width="12" height="12" fill="${REFUSED}"/>`,
    markup`<text x="${second + 18}" y="19">refused (429, 403): ${refused}</text>`,
    ...grid(top, step),
    ...shown.map((m, i) => minuteBars(m, i, top)),
    ...times(shown),
    centred(14, middle, 'requests per minute', markup` transform="rotate(-90 14 ${middle})"`),
    centred(center, HEIGHT - 6, 'minute (UTC), the last one under way', muted),
  ];
  if (most === 0) lines.push(centred(center, middle, 'No request in this hour', muted));
  const size = markup`viewBox="0 0 ${WIDTH} ${HEIGHT}" width="${WIDTH}" height="${HEIGHT}"`;
  const look = markup`role="img" aria-labelledby="traffic-title" font-size="13" fill="${INK}"`;
  return markup`<svg xmlns="http://www.w3.org/2000/svg" ${size} ${look}>
${lines.map((line) => markup`${line}\n`)}</svg>`;
}
