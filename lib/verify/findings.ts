// What a probe finds on one endpoint, each finding told once, with the notes and the words they are written in.

/** The findings and notes of one endpoint's probe. */
export class Findings {
  /** What the server does against the contract: told first. */
  private readonly main: string[] = [];
  /** Rate-limit fields that disagree with the contract: told after the rest. */
  private readonly fields: string[] = [];
  private readonly keys = new Set<string>();
  readonly notes: string[] = [];

  /** Records a finding once per key, so that one fault seen on many responses is told once. */
  find(key: string, text: string): void {
    this.add(key, text, this.main);
  }

  findField(key: string, text: string): void {
    this.add(key, text, this.fields);
  }

  note(text: string): void {
    if (!this.notes.includes(text)) this.notes.push(text);
  }

  /** Whether the server was found to contradict the contract, its fields aside. */
  get any(): boolean {
    return this.main.length > 0;
  }

  get all(): string[] {
    return [...this.main, ...this.fields];
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

/** A header value as shown in a finding: numbers bare, anything else quoted. */
export function shown(value: string): string {
  return /^-?\d+(\.\d+)?$/.test(value) ? value : JSON.stringify(value);
}
