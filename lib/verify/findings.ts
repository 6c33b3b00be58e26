// What a probe finds on one endpoint, each finding told once, with the notes and the words they are written in.
import type { EndpointReport } from './types.js';

/**
 * The findings and notes of one endpoint's probe, in two sections: the contract (counts per window, keys, the 429)
 * and the rate-limit header fields, `Retry-After` among them.
 */
export class Findings {
  /** What the server does against the contract. */
  readonly contract: string[] = [];
  /** Header fields present that contradict the contract, the requests sent, or themselves. */
  readonly headers: string[] = [];
  private readonly keys = new Set<string>();
  /** What is worth knowing about the contract but contradicts nothing. */
  readonly notes: string[] = [];
  /** Header fields absent, or written in another draft or convention: failures only with `strictHeaders`. */
  readonly headerNotes: string[] = [];

  /** Records a finding about the contract once per key, so that one fault seen on many responses is told once. */
  find(key: string, text: string): void {
    this.add(key, text, this.contract);
  }

  /** Records a finding about the header fields once per key. */
  findField(key: string, text: string): void {
    this.add(key, text, this.headers);
  }

  note(text: string): void {
    if (!this.notes.includes(text)) this.notes.push(text);
  }

  noteField(text: string): void {
    if (!this.headerNotes.includes(text)) this.headerNotes.push(text);
  }

  /** Whether the server was found to contradict the contract, its fields aside. */
  get any(): boolean {
    return this.contract.length > 0;
  }

  /** A refusal of `status` where the contract says 429: a server error there is a finding of its own. */
  refusedAs(status: number): void {
    if (status !== 429) this.find('status', `answered ${status} where the contract says 429`);
  }

  /**
   * A refusal of `status` where the contract lets the request pass: `text` for a 429; for a server error, what it
   * answered `where`, since it tells nothing of the limit.
   */
  refusedEarly(status: number, key: string, text: string, where: string, label = ''): void {
    this.find(key, status === 429 ? text : `${label}answered ${status} ${where}`);
  }

  /**
   * The endpoint's verdicts: its findings and notes, those of its header fields apart, with what its answers sent.
   * With `strict`, what is only noted of the fields fails the endpoint too; `probed` is false when no answer came.
   */
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

/** `1 request`, `3 requests`. */
export function requestsText(n: number): string {
  return `${n} request${n === 1 ? '' : 's'}`;
}

/** Milliseconds as seconds rounded up to a tenth, so that "within 0.8 s" holds. */
export function tenths(ms: number): number {
  return Math.ceil(ms / 100) / 10;
}

/** The longest header value a finding quotes whole; a longer one is cut, and its length told. */
const QUOTED_CHARS = 100;

/** `value`, or its first QUOTED_CHARS characters and its length when it is longer (`aaaa… (1,591 characters)`). */
function cut(value: string, quote: (text: string) => string): string {
  if (value.length <= QUOTED_CHARS) return quote(value);
  const length = new Intl.NumberFormat('en').format(value.length);
  return `${quote(`${value.slice(0, QUOTED_CHARS)}…`)} (${length} characters)`;
}

/** A header value as shown in a finding: numbers bare, anything else quoted, cut short when long. */
export function shown(value: string): string {
  return /^-?\d{1,20}(\.\d{1,20})?$/.test(value) ? value : cut(value, JSON.stringify);
}

/** A structured field's value as shown in a finding: as sent, cut short when long. */
export function asSent(value: string): string {
  return cut(value, (text) => text);
}
