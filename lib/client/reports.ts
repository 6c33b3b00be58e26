// report(): rule 7's bodies, posted in the background; the latest body per URL, on every 5th change or each interval.
import { ListingClientError } from './errors.js';
import type { Endpoint } from './endpoints.js';
import type { ClientSettings } from './options.js';
import type { Sender } from './sender.js';

const CHANGES_PER_REPORT = 5;

class Report {
  json: string | undefined;
  changes = 0;
  pending = false;
  lastSent = 0;
  sending: Promise<void> | undefined;
  timer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    readonly endpoint: Endpoint,
    readonly url: string,
  ) {}
}

/** A body the server did not want, or a banned client's, is not sent again. */
function isFinal(error: unknown): boolean {
  if (!(error instanceof ListingClientError)) return false;
  const { code, status } = error;
  return code === 'ERR_BANNED' || code === 'ERR_TOO_LARGE' || (code === 'ERR_HTTP' && (status ?? 0) < 500);
}

export class Reports {
  readonly #byUrl = new Map<string, Report>();

  constructor(
    private readonly sender: Sender,
    private readonly settings: Pick<ClientSettings, 'reportIntervalMs' | 'onError'>,
    private readonly closed: () => boolean,
  ) {}

  add(endpoint: Endpoint, url: string, json: string | undefined): void {
    let report = this.#byUrl.get(url);
    if (!report) {
      report = new Report(endpoint, url);
      this.#byUrl.set(url, report);
    }
    if (json === report.json) return;
    report.json = json;
    report.pending = true;
    report.changes++;
    if (report.changes >= CHANGES_PER_REPORT) this.#flush(report);
    else this.#schedule(report);
  }

  flushAll(): void {
    for (const report of this.#byUrl.values()) this.#flush(report);
  }

  #flush(report: Report): void {
    if (report.timer !== undefined) clearTimeout(report.timer);
    report.timer = undefined;
    if (!report.pending || report.sending) return;
    report.lastSent = Date.now();
    // Paced by the POST row: the body is read when the request goes, so the latest one wins.
    const latest = () => {
      report.pending = false;
      report.changes = 0;
      return report.json;
    };
    let failed = false;
    report.sending = this.sender
      .call(report.endpoint, report.url, latest)
      .then(
        () => {},
        (error: unknown) => {
          failed = true;
          // Pending again, unless a newer body took its place; close() sends each body once.
          report.pending = !this.closed() && !isFinal(error);
          this.settings.onError(error);
        },
      )
      .finally(() => {
        report.sending = undefined;
        if (!report.pending) return;
        if (!failed && (report.changes >= CHANGES_PER_REPORT || this.closed())) this.#flush(report);
        else this.#schedule(report, !failed);
      });
  }

  /** A new body keeps the process alive until it has been tried once; one that failed does not. */
  #schedule(report: Report, hold = true): void {
    if (report.timer !== undefined && hold) report.timer.ref();
    if (report.timer !== undefined || this.closed()) return;
    const since = report.lastSent === 0 ? Date.now() : report.lastSent;
    report.timer = setTimeout(
      () => this.#flush(report),
      Math.max(since + this.settings.reportIntervalMs - Date.now(), 0),
    );
    if (!hold) report.timer.unref();
  }
}
