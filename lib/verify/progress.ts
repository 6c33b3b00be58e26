// The command's progress on stderr: on a terminal a line per endpoint updated in place, elsewhere a line per event.
import type { MultiBar as ProgressBars, SingleBar } from 'cli-progress';
import { MultiBar } from './progress-bar.cjs';
import type { VerifyEvent, VerifyPlan, VerifyWaitReason } from './types.js';

export interface Output {
  write(text: string): unknown;
  readonly isTTY?: boolean;
}

interface Progress {
  readonly onEvent: (event: VerifyEvent) => void;
  stop(): void;
}

const why: Readonly<Record<VerifyWaitReason, string>> = {
  busy: 'for the counter in use to reopen',
  window: 'for the window to end',
  boundary: "to send the rest of the limit before the window's end",
  limit: 'for its other limits to allow the next request',
};

/** `4 min 2 s`, rounded up. */
export function durationText(ms: number): string {
  const total = Math.ceil(ms / 1000);
  if (total < 60) return `${total} s`;
  const rest = total % 60;
  return `${Math.floor(total / 60)} min${rest ? ` ${rest} s` : ''}`;
}

/** What an endpoint's probe is doing, as of its last event. */
function status(event: VerifyEvent): string {
  if (event.type === 'endpoint') return 'probing';
  if (event.type === 'wait') return `waiting ${durationText(event.ms)} ${why[event.reason]}`;
  return event.result.ok ? 'pass' : 'fail';
}

export function progressOn(stream: Output, plan: VerifyPlan): Progress {
  return stream.isTTY && MultiBar ? new Bars(MultiBar, stream, plan) : new Lines(stream);
}

class Lines implements Progress {
  private readonly names = new Map<string, string>();

  constructor(private readonly stream: Output) {}

  readonly onEvent = (event: VerifyEvent): void => {
    if (event.type === 'endpoint') this.names.set(event.endpoint, `[${event.index}/${event.total}] ${event.endpoint}`);
    const endpoint = event.type === 'done' ? event.result.endpoint : event.endpoint;
    this.stream.write(`${this.names.get(endpoint)}: ${status(event)}\n`);
  };

  stop(): void {}
}

interface Line {
  readonly bar: SingleBar;
  readonly total: number;
  started: number | undefined;
  status: string;
}

/** A bar per endpoint of the seconds run against those planned, and what it is doing. */
class Bars implements Progress {
  private readonly bars: ProgressBars;
  private readonly lines = new Map<string, Line>();
  private readonly timer: ReturnType<typeof setInterval>;

  constructor(Multi: NonNullable<typeof MultiBar>, stream: Output, plan: VerifyPlan) {
    this.bars = new Multi({
      stream: stream as NodeJS.WritableStream,
      format: '{endpoint}  [{bar}] {value}/{total} s  {status}',
      barsize: 20,
    });
    const width = Math.max(...plan.endpoints.map((e) => e.endpoint.length));
    for (const { endpoint, waitMs } of plan.endpoints) {
      const total = Math.max(Math.ceil(waitMs / 1000), 1);
      const bar = this.bars.create(total, 0, { endpoint: endpoint.padEnd(width), status: 'queued' });
      this.lines.set(endpoint, { bar, total, started: undefined, status: 'queued' });
    }
    this.timer = setInterval(() => this.tick(), 250);
  }

  readonly onEvent = (event: VerifyEvent): void => {
    const line = this.lines.get(event.type === 'done' ? event.result.endpoint : event.endpoint);
    if (!line) return;
    line.status = status(event);
    if (event.type === 'endpoint') line.started = Date.now();
    if (event.type === 'done') {
      line.started = undefined;
      line.bar.update(line.total, { status: line.status });
    } else this.update(line);
    this.bars.update();
  };

  private tick(): void {
    for (const line of this.lines.values()) if (line.started !== undefined) this.update(line);
  }

  // A probe may run longer than planned.
  private update(line: Line): void {
    const ran = Math.floor((Date.now() - (line.started ?? Date.now())) / 1000);
    line.bar.update(Math.min(Math.max(ran, 0), line.total), { status: line.status });
  }

  stop(): void {
    clearInterval(this.timer);
    this.bars.stop();
  }
}
