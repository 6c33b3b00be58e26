// The last hour of traffic as a small SVG chart (no script), with the same numbers in a table.
import type { TrafficSummary } from '../limiter/types.js';
import { type Html, markup } from './html.js';

const WIDTH = 640;
const LABEL = 250;
const ROW = 30;
const BAR = 10;

/** Allowed and refused requests per endpoint, as pairs of bars on one scale. */
export function trafficChart(summary: TrafficSummary): Html {
  const rows = summary.endpoints;
  const most = Math.max(1, ...rows.map((r) => Math.max(r.allowed, r.refused)));
  const scale = (n: number) => Math.round(((WIDTH - LABEL - 60) * n) / most);
  const height = ROW * rows.length + 30;
  const total = rows.reduce((sum, r) => sum + r.allowed + r.refused, 0);
  const bars = rows.map((r, i) => {
    const y = 30 + i * ROW;
    return markup`<text x="0" y="${y + 12}" font-size="12">${r.endpoint}</text>
      <rect x="${LABEL}" y="${y}" width="${scale(r.allowed)}" height="${BAR}" fill="#2f6fdb"></rect>
      <text x="${LABEL + scale(r.allowed) + 4}" y="${y + 9}" font-size="10">${r.allowed}</text>
      <rect x="${LABEL}" y="${y + BAR + 2}" width="${scale(r.refused)}" height="${BAR}" fill="#b3261e"></rect>
      <text x="${LABEL + scale(r.refused) + 4}" y="${y + BAR + 11}" font-size="10">${r.refused}</text>`;
  });
  return markup`<svg
    xmlns="http://www.w3.org/2000/svg"
    viewBox="0 0 ${WIDTH} ${height}"
    width="${WIDTH}"
    height="${height}"
    role="img"
    aria-labelledby="traffic-title"
  >
    <title id="traffic-title">Allowed and refused requests per endpoint in the last hour: ${total} in all</title>
    <rect x="${LABEL}" y="4" width="10" height="10" fill="#2f6fdb"></rect>
    <text x="${LABEL + 14}" y="13" font-size="12">allowed</text>
    <rect x="${LABEL + 80}" y="4" width="10" height="10" fill="#b3261e"></rect>
    <text x="${LABEL + 94}" y="13" font-size="12">refused (429, 403)</text>
    ${bars}
  </svg>`;
}
