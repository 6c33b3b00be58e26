// What a probe finds on one endpoint, each finding told once, with the notes and the words they are written in.
import { clip } from '../shared/check.js';
import type { EndpointReport } from './types.js';

/** One endpoint's findings and notes, on the contract and on the header fields apart. */
export class Findings {
  readonly contract: string[] = [];
  readonly headers: string[] = [];
  private readonly keys = new Set<string>();
  readonly notes: string[] = [];
  /** Failures only with `strictHeaders`. */
  readonly headerNotes: string[] = [];

  /** Once per key, so that one fault seen on many responses is told once. */
  find(key: string, text: string): void {
    this.add(key, text, this.contract);
  }

  findField(key: string, text: string): void {
    this.add(key, text, this.headers);
  }

  note(text: string): void {
    if (!this.notes.includes(text)) this.notes.push(text);
  }

  noteField(text: string): void {
    if (!this.headerNotes.includes(text)) this.headerNotes.push(text);
  }

  get any(): boolean {
    return this.contract.length > 0;
  }

  refusedAs(status: number): void {
    if (status !== 429) this.find('status', `answered ${status} where the contract says 429`);
  }

  /** A refusal where the contract lets the request pass: a server error tells nothing of the limit. */
  refusedEarly(status: number, key: string, text: string, where: string, label = ''): void {
    this.find(key, status === 429 ? text : `${label}answered ${status} ${where}`);
  }

  verdicts(
    strict: boolean,
    sent: readonly string[],
    probed: boolean,
  ): Pick<EndpointReport, 'ok' | 'findings' | 'notes' | 'headers'> {
    const headers = strict ? [...this.headers, ...this.headerNotes] : this.headers;
    return {
      ok: this.contract.length === 0 && headers.length === 0,
      findings: this.contract,
      notes: this.notes,
      headers: { probed, sent, findings: headers, notes: strict ? [] : this.headerNotes },
    };
  }

  private add(key: string, text: string, list: string[]): void {
    if (this.keys.has(key)) return;
    this.keys.add(key);
    list.push(text);
  }
}

export function requestsText(n: number): string {
  return `${n} request${n === 1 ? '' : 's'}`;
}

/** Rounded up to a tenth of a second, so that "within 0.8 s" holds. */
export function tenths(ms: number): number {
  return Math.ceil(ms / 100) / 10;
}

const QUOTED_CHARS = 100;

/** `aaaa… (1,591 characters)` for a long value. */
function cut(value: string, quote: (text: string) => string): string {
  if (value.length <= QUOTED_CHARS) return quote(value);
  const length = new Intl.NumberFormat('en').format(value.length);
  return `${quote(clip(value, QUOTED_CHARS))} (${length} characters)`;
}

export function shown(value: string): string {
  return /^-?\d{1,20}(\.\d{1,20})?$/.test(value) ? value : cut(value, JSON.stringify);
}

export function asSent(value: string): string {
  return cut(value, (text) => text);
}
