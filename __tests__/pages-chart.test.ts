// The operator's chart of the last hour: its exact SVG, its scale, its bars, and what hostile counts make of it.
import type { TrafficMinute } from '../lib';
import { scaleOf, trafficChart } from '../lib/pages/chart';

const [ALLOWED, REFUSED] = ['#2f6fdb', '#b3261e'];
const minute = (iso: string, allowed: number, refused: number): TrafficMinute => ({
  at: new Date(iso),
  allowed,
  refused,
});

/** `count` minutes from 14:00 UTC, each with the counts `of(i)` gives. */
const hour = (count: number, of: (i: number) => [number, number]): TrafficMinute[] =>
  Array.from({ length: count }, (_, i) => {
    const [allowed, refused] = of(i);
    return { at: new Date(Date.UTC(2026, 0, 1, 14, i)), allowed, refused };
  });

/** The minutes of a chart as its groups hold them: `[at, allowed, refused]`. */
const data = (svg: string) =>
  [...svg.matchAll(/<g data-at="([^"]+)" data-allowed="([^"]+)" data-refused="([^"]+)">/g)].map((m) => m.slice(1));

/** The bars of the minute at `iso`: `[y, height, fill]` of each, the allowed one first. */
const bars = (svg: string, iso: string) => {
  const group = svg.slice(svg.indexOf(`<g data-at="${iso}"`), svg.indexOf('</g>', svg.indexOf(`<g data-at="${iso}"`)));
  return [...group.matchAll(/<rect x="[^"]+" y="(\d+)" width="9" height="(\d+)" fill="([^"]+)"\/>/g)].map((m) => [
    Number(m[1]),
    Number(m[2]),
    m[3],
  ]);
};

describe('trafficChart', () => {
  it('draws a small series exactly: legend with totals, scale, a bar per minute, every tenth minute’s time', () => {
    const svg = trafficChart('GET /v1/bots/:id', [
      minute('2026-01-01T14:09:00Z', 3, 1),
      minute('2026-01-01T14:10:00Z', 0, 0),
      minute('2026-01-01T14:11:00Z', 1, 0),
    ]).text;
    expect(svg).toBe(
      `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 868 290" width="868" height="290" role="img" aria-labelledby="traffic-title" font-size="13" fill="#1b1b1b">
<title id="traffic-title">GET /v1/bots/:id: 4 allowed and 1 refused in the last hour, per minute</title>
<rect x="64" y="8" width="12" height="12" fill="#2f6fdb"/>
<text x="82" y="19">allowed: 4</text>
<rect x="186" y="8" width="12" height="12" fill="#b3261e"/>
<text x="204" y="19">refused (429, 403): 1</text>
<line x1="64" y1="240" x2="844" y2="240" stroke="#4a4f57"/>
<text x="56" y="244" text-anchor="end">0</text>
<line x1="64" y1="190" x2="844" y2="190" stroke="#d8dbe0"/>
<text x="56" y="194" text-anchor="end">1</text>
<line x1="64" y1="140" x2="844" y2="140" stroke="#d8dbe0"/>
<text x="56" y="144" text-anchor="end">2</text>
<line x1="64" y1="90" x2="844" y2="90" stroke="#d8dbe0"/>
<text x="56" y="94" text-anchor="end">3</text>
<line x1="64" y1="40" x2="844" y2="40" stroke="#d8dbe0"/>
<text x="56" y="44" text-anchor="end">4</text>
<g data-at="2026-01-01T14:09:00.000Z" data-allowed="3" data-refused="1"><title>14:09 UTC: 3 allowed, 1 refused</title><rect x="64" y="40" width="13" height="200" fill="transparent"/><rect x="66" y="90" width="9" height="150" fill="#2f6fdb"/><rect x="66" y="40" width="9" height="50" fill="#b3261e"/></g>
<g data-at="2026-01-01T14:10:00.000Z" data-allowed="0" data-refused="0"><title>14:10 UTC: 0 allowed, 0 refused</title><rect x="77" y="40" width="13" height="200" fill="transparent"/></g>
<g data-at="2026-01-01T14:11:00.000Z" data-allowed="1" data-refused="0"><title>14:11 UTC: 1 allowed, 0 refused</title><rect x="90" y="40" width="13" height="200" fill="transparent"/><rect x="92" y="190" width="9" height="50" fill="#2f6fdb"/></g>
<line x1="83.5" y1="240" x2="83.5" y2="245" stroke="#4a4f57"/>
<text x="83.5" y="259" text-anchor="middle">14:10</text>
<text x="14" y="140" text-anchor="middle" transform="rotate(-90 14 140)">requests per minute</text>
<text x="454" y="284" text-anchor="middle" fill="#4a4f57">minute (UTC), the last one under way</text>
</svg>`,
    );
  });

  it.each([
    { most: 0, top: 1, step: 1 },
    { most: 1, top: 1, step: 1 },
    { most: 3, top: 3, step: 1 },
    { most: 4, top: 4, step: 1 },
    { most: 5, top: 6, step: 2 },
    { most: 8, top: 8, step: 2 },
    { most: 9, top: 10, step: 5 },
    { most: 20, top: 20, step: 5 },
    { most: 21, top: 30, step: 10 },
    { most: 1000, top: 1000, step: 500 },
    { most: 1234, top: 1500, step: 500 },
    { most: 7_654_321, top: 8_000_000, step: 2_000_000 },
    { most: 2 * Number.MAX_SAFE_INTEGER, top: 2e16, step: 5e15 },
  ])('scales a tallest bar of $most to $top, in steps of $step (at most 4)', ({ most, top, step }) => {
    expect(scaleOf(most)).toEqual({ top, step });
    expect(top / step).toBeLessThanOrEqual(4);
  });

  it.each([
    {
      name: 'allowed and refused, on a scale of 4',
      scale: 4,
      counts: [1, 1],
      bars: [
        [190, 50, ALLOWED],
        [140, 50, REFUSED],
      ],
    },
    { name: 'nothing', scale: 4, counts: [0, 0], bars: [] },
    { name: 'refused only', scale: 4, counts: [0, 2], bars: [[140, 100, REFUSED]] },
    // 1 of 1,000 rounds to no height: it is drawn 1 high, so that no count hides.
    { name: '1 allowed of 1,000', scale: 1000, counts: [1, 0], bars: [[239, 1, ALLOWED]] },
    { name: '1 refused of 1,000', scale: 1000, counts: [0, 1], bars: [[239, 1, REFUSED]] },
    {
      name: '1 refused on 999 allowed of 1,000',
      scale: 1000,
      counts: [999, 1],
      bars: [
        [41, 199, ALLOWED],
        [40, 1, REFUSED],
      ],
    },
  ])('draws the bars of $name, refused on allowed, within the plot', ({ scale, counts, bars: expected }) => {
    const svg = trafficChart(
      'All endpoints',
      hour(2, (i) => (i === 0 ? [scale, 0] : (counts as [number, number]))),
    ).text;
    expect(bars(svg, '2026-01-01T14:01:00.000Z')).toEqual(expected);
  });

  it('says so when nothing was counted, on a scale of 0 to 1', () => {
    const svg = trafficChart(
      'All endpoints',
      hour(60, () => [0, 0]),
    ).text;
    expect(svg).toContain('<text x="454" y="140" text-anchor="middle" fill="#4a4f57">No request in this hour</text>');
    expect([...svg.matchAll(/text-anchor="end">([^<]+)</g)].map((m) => m[1])).toEqual(['0', '1']);
    expect(data(svg)).toHaveLength(60);
  });

  it('takes hostile counts as whole numbers from 0 to the largest safe integer: no NaN, no Infinity, no negative', () => {
    const svg = trafficChart(
      'All endpoints',
      hour(
        6,
        (i) =>
          [
            [NaN, -5],
            [Infinity, 1e300],
            [2.7, 0.5],
            [-Infinity, NaN],
            [0, 0],
            [Number.MAX_VALUE, 3],
          ][i] as [number, number],
      ),
    ).text;
    expect(svg).not.toMatch(/NaN|Infinity|="-|e\+/);
    expect(data(svg).map(([, allowed, refused]) => [allowed, refused])).toEqual([
      ['0', '0'],
      [String(Number.MAX_SAFE_INTEGER), String(Number.MAX_SAFE_INTEGER)],
      ['2', '0'],
      ['0', '0'],
      ['0', '0'],
      [String(Number.MAX_SAFE_INTEGER), '3'],
    ]);
    // The totals in full, the axis in short words.
    expect(svg).toContain('<text x="82" y="19">allowed: 18,014,398,509,481,984</text>');
    expect([...svg.matchAll(/text-anchor="end">([^<]+)</g)].map((m) => m[1])).toEqual([
      '0',
      '5000T',
      '10,000T',
      '15,000T',
      '20,000T',
    ]);
  });

  it('escapes what it is told the chart is of', () => {
    const svg = trafficChart(
      '<script>alert(1)</script> & "x"',
      hour(1, () => [1, 0]),
    ).text;
    expect(svg).toContain(
      '<title id="traffic-title">&lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;x&quot;: 1 allowed',
    );
    expect(svg).not.toContain('<script>');
  });

  it('shows the last 60 minutes of a longer series: its size is bounded whatever it is given', () => {
    const most = Number.MAX_SAFE_INTEGER;
    const svg = trafficChart(
      'x'.repeat(200),
      hour(10_000, () => [most, most]),
    ).text;
    const shown = data(svg);
    expect(shown).toHaveLength(60);
    expect(shown[0]?.[0]).toBe(new Date(Date.UTC(2026, 0, 1, 14, 10_000 - 60)).toISOString());
    expect(svg.length).toBeLessThan(32_000);
  });
});
