// The `listing-limits` command line: its arguments, progress while it runs, the table of findings, the exit code.
import { parseArgs } from 'node:util';
import { closest, distance } from 'fastest-levenshtein';
import { ListingLimitsError } from '../shared/errors.js';
import { listingHint, listingOf } from '../contract/listing-names.js';
import { listingNames } from '../contract/listings.js';
import type { WindowKind } from '../contract/limit.js';
import { planVerification, verifyContract } from './run.js';
import type { VerifyOptions, VerifyPlan, VerifyReport } from './types.js';
import { durationText, type Output, progressOn } from './progress.js';

/** The command's streams, and what tests put in place of the network and the clock. */
export interface CliContext {
  readonly stdout: Output;
  readonly stderr: Output;
  readonly fetch?: VerifyOptions['fetch'];
  readonly sleep?: VerifyOptions['sleep'];
  readonly now?: VerifyOptions['now'];
}

const EXIT = Object.freeze({ pass: 0, fail: 1, usage: 2 });

const eitherListing = new Intl.ListFormat('en', { type: 'disjunction' }).format(listingNames);
const listingArgument = `--listing ${listingNames.join('|')}`;

export const USAGE = `Usage: listing-limits verify <base-url> ${listingArgument} [options]

Probes a running API, every endpoint at once, and checks that it enforces listing ${eitherListing} of the
rate-limit contract: limit requests pass and the next gets a 429, the window opens again, requests across a
window's end show the kind of window the API counts, another token has its own counter, and path parameters
share the counter. The rate-limit header fields and Retry-After, in whichever draft or convention, are
judged apart: those present must agree. A run lasts about as long as the listing's longest window.

Options:
  ${listingArgument.padEnd(19)}  the listing the API serves (required)
  --token T            Authorization value to send; without one the server counts by client IP
  --other-token T      Authorization value of the requests on another client's counter
                       (default: listing-limits-verify- and random hex)
  --only ENDPOINT      check only this endpoint, e.g. --only "GET /v1/bots/:id"; repeatable
  --param NAME=VALUE   value of a path parameter, e.g. --param id=123 (default 1); given twice,
                       the second value is the other path (default: the value plus one)
  --window KIND        fixed or sliding: the windows the API should count (default fixed)
  --concurrency N      probe at most N endpoints at a time (default: all of them at once)
  --grace MS           milliseconds kept between the requests and each window's end (default 1000,
                       at most a quarter of the window)
  --timeout MS         milliseconds a request may take; then its endpoint fails (default 10000)
  --strict-headers     fail endpoints on header notes too: fields absent, or in another draft
  --json               print the report (or the plan) as JSON on stdout
  --dry-run            print the plan, and send nothing
  -h, --help           print this help

Exit codes: 0 every endpoint passes, 1 an endpoint fails or could not be checked, 2 wrong arguments.
`;

/** `option`: the option of verifyContract that an argument gives, named in place of it in its errors. */
const cliOptions = {
  listing: { type: 'string', option: 'listing' },
  token: { type: 'string', option: 'token' },
  'other-token': { type: 'string', option: 'otherToken' },
  only: { type: 'string', multiple: true, option: 'only' },
  param: { type: 'string', multiple: true, option: 'params' },
  window: { type: 'string', option: 'window' },
  concurrency: { type: 'string', option: 'concurrency' },
  grace: { type: 'string', option: 'graceMs' },
  timeout: { type: 'string', option: 'timeoutMs' },
  'strict-headers': { type: 'boolean', option: 'strictHeaders' },
  json: { type: 'boolean' },
  'dry-run': { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

class UsageError extends Error {}

const optionArguments = Object.keys(cliOptions).map((name) => `--${name}`);

// Names the argument Node's parser refused in one line: Node's messages span several and differ between versions.
function checkTokens(tokens: NonNullable<ReturnType<typeof parseArgs>['tokens']>): void {
  for (const token of tokens) {
    if (token.kind !== 'option') continue;
    const { name, rawName, value, inlineValue } = token;
    const option = (cliOptions as Record<string, { type: 'string' | 'boolean' }>)[name];
    if (!option) {
      const meant = closest(rawName, optionArguments);
      const hint = distance(rawName, meant) <= 2 ? `. Did you mean ${meant}?` : '';
      throw new UsageError(`unknown option ${rawName}${hint}`);
    }
    if (option.type === 'boolean') {
      if (value !== undefined) throw new UsageError(`${rawName} takes no value; got ${JSON.stringify(value)}`);
    } else if (value === undefined) {
      throw new UsageError(`${rawName} needs a value`);
    } else if (!inlineValue && value.startsWith('-')) {
      // `--token --dry-run` more likely forgot the token than meant it to be "--dry-run".
      throw new UsageError(
        `${rawName} needs a value; got the option-like ${JSON.stringify(value)} ` +
          `(write ${rawName}=${value} if that is the value)`,
      );
    }
  }
}

function parse(argv: readonly string[]) {
  let parsed;
  try {
    parsed = parseArgs({ args: [...argv], options: cliOptions, allowPositionals: true, strict: true });
  } catch (error) {
    const { tokens } = parseArgs({
      args: [...argv],
      options: cliOptions,
      allowPositionals: true,
      strict: false,
      tokens: true,
    });
    checkTokens(tokens);
    throw new UsageError((error as Error).message.split('\n')[0]?.replace(/\.$/, '') ?? 'bad arguments');
  }
  const { values, positionals } = parsed;
  const [command, baseUrl, extra] = positionals;
  const json = values.json === true;
  const dryRun = values['dry-run'] === true;
  const listing = values.listing;
  if (values.help) return { help: true } as const;
  const synopsis = `listing-limits verify <base-url> ${listingArgument}`;
  if (command === undefined) throw new UsageError(`missing command: ${synopsis}`);
  if (command !== 'verify') throw new UsageError(`unknown command ${JSON.stringify(command)}; the command is verify`);
  if (baseUrl === undefined) throw new UsageError('verify needs <base-url>, e.g. http://127.0.0.1:3000');
  if (extra !== undefined) throw new UsageError(`unexpected argument ${JSON.stringify(extra)}`);
  if (typeof listing !== 'string') throw new UsageError(`--listing is required: ${eitherListing}`);
  const named = listingOf(listing);
  if (!named) {
    const hint = listingHint(listing);
    throw new UsageError(`--listing must be ${eitherListing}; got ${JSON.stringify(listing)}${hint && `.${hint}`}`);
  }

  const params: Record<string, string[]> = {};
  for (const param of values.param ?? []) {
    const match = /^([^=]+)=(.*)$/.exec(param);
    if (!match?.[1]) throw new UsageError(`--param must be NAME=VALUE, e.g. id=123; got ${JSON.stringify(param)}`);
    (params[match[1]] ??= []).push(match[2] ?? '');
  }
  const whole = (value: string | undefined, argument: string, what: string) => {
    if (value === undefined) return undefined;
    if (!/^\d+$/.test(value)) throw new UsageError(`${argument} must be ${what}; got ${JSON.stringify(value)}`);
    return Number(value);
  };
  const graceMs = whole(values.grace, '--grace', 'whole milliseconds');
  const timeoutMs = whole(values.timeout, '--timeout', 'whole milliseconds');
  const concurrency = whole(values.concurrency, '--concurrency', 'a whole number of endpoints, 1 or more');
  const options: VerifyOptions = {
    baseUrl,
    listing: named,
    ...(values.token !== undefined && { token: values.token }),
    ...(values['other-token'] !== undefined && { otherToken: values['other-token'] }),
    ...(values.only !== undefined && { only: values.only }),
    ...(values.param !== undefined && { params }),
    // Checked by verifyContract, which names the kinds.
    ...(values.window !== undefined && { window: values.window as WindowKind }),
    ...(concurrency !== undefined && { concurrency }),
    ...(graceMs !== undefined && { graceMs }),
    ...(timeoutMs !== undefined && { timeoutMs }),
    ...(values['strict-headers'] === true && { strictHeaders: true }),
  };
  return { help: false, json, dryRun, options } as const;
}

function usageOf(error: ListingLimitsError): UsageError {
  const [, name, param] = /^options\.(\w+)(?:\.(\w+))?/.exec(error.field) ?? [];
  const given = Object.entries(cliOptions).find(([, o]) => 'option' in o && o.option === name);
  const argument = name === 'baseUrl' ? '<base-url>' : given ? `--${given[0]}` : error.field;
  const named = name === 'params' && param ? `${argument} ${param}` : argument;
  const reason = error.message.slice(error.message.indexOf(error.field) + error.field.length);
  return new UsageError(`${named}${reason.replace(/\.$/, '')}`);
}

function textTable(
  header: readonly string[],
  rows: readonly (readonly string[])[],
  right: readonly number[] = [],
): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => (row[i] ?? '').length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, i) => (right.includes(i) ? cell.padStart(widths[i] ?? 0) : cell.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd();
  return [header, ...rows].map(line).join('\n');
}

function plannedTotals(plan: VerifyPlan): string {
  const total = plan.endpoints.length;
  if (total === 1) return 'one endpoint';
  if (plan.concurrency >= total) return `all ${total} endpoints at once`;
  return plan.concurrency === 1 ? 'one endpoint after another' : `${plan.concurrency} endpoints at a time`;
}

function planText(plan: VerifyPlan, listing: string): string {
  const rows = plan.endpoints.map((e) => [e.endpoint, e.paths.join(', '), String(e.requests), durationText(e.waitMs)]);
  const boundaryRequests = plan.endpoints.reduce((sum, e) => sum + e.boundaryRequests, 0);
  return [
    `Plan: listing ${listing}, ${plan.window} windows, at ${plan.baseUrl}, ${plannedTotals(plan)}. ` +
      'Nothing was sent (--dry-run).',
    '',
    textTable(['Endpoint', 'Paths', 'Requests', 'Wait'], rows, [2]),
    '',
    `${plan.requests} requests in about ${durationText(plan.waitMs)} ` +
      `(${boundaryRequests} of them after a window's end, to tell its kind).`,
    '',
  ].join('\n');
}

function withDetails(cells: readonly string[], details: readonly string[]): string[][] {
  const blank = cells.map(() => '');
  return [[...cells, details[0] ?? ''], ...details.slice(1).map((detail) => [...blank, detail])];
}

const verdict = (findings: readonly string[]) => (findings.length === 0 ? 'pass' : 'fail');
const noted = (notes: readonly string[]) => notes.map((note) => `note: ${note}`);

function reportText(report: VerifyReport, listing: string): string {
  const { endpoints } = report;
  const contract = endpoints.flatMap((e) =>
    withDetails(
      [e.endpoint, verdict(e.findings), String(e.requests), e.windowSeen],
      [...e.findings, ...noted(e.notes)],
    ),
  );
  const headers = endpoints.flatMap((e) =>
    withDetails(
      e.headers.probed
        ? [e.endpoint, verdict(e.headers.findings), e.headers.sent.join(', ') || 'nothing']
        : [e.endpoint, 'not probed', ''],
      [...e.headers.findings, ...noted(e.headers.notes)],
    ),
  );
  const failed = endpoints.filter((e) => !e.ok).length;
  const total = endpoints.length;
  const onContract = endpoints.filter((e) => e.findings.length > 0).length;
  const onHeaders = endpoints.filter((e) => e.headers.findings.length > 0).length;
  let summary: string;
  if (total === 1) {
    const on = [onContract && 'on the contract', onHeaders && 'on its headers'].filter(Boolean).join(' and ');
    summary = failed ? `The endpoint fails ${on}.` : 'The endpoint passes.';
  } else {
    const on = [onContract && `${onContract} on the contract`, onHeaders && `${onHeaders} on their headers`];
    summary = failed
      ? `${failed} of ${total} endpoints fail: ${on.filter(Boolean).join(', ')}.`
      : `All ${total} endpoints pass.`;
  }
  return [
    `listing-limits verify ${report.baseUrl}, listing ${listing}, ${report.window} windows` +
      (report.strictHeaders ? ', strict headers' : ''),
    '',
    textTable(['Endpoint', 'Result', 'Requests', 'Window', 'Findings'], contract, [2]),
    '',
    textTable(['Headers', 'Result', 'Sent', 'Findings'], headers),
    '',
    summary,
    '',
  ].join('\n');
}

/** Runs the command on its arguments (without `node` and the script); resolves to the exit code. */
export async function runCli(argv: readonly string[], context: CliContext): Promise<number> {
  const { stdout, stderr } = context;
  let parsed: ReturnType<typeof parse>;
  let plan: VerifyPlan;
  try {
    parsed = parse(argv);
    if (parsed.help) {
      stdout.write(USAGE);
      return EXIT.pass;
    }
    plan = planVerification(parsed.options);
  } catch (error) {
    const usage = error instanceof ListingLimitsError ? usageOf(error) : error;
    if (!(usage instanceof UsageError)) throw error;
    stderr.write(`listing-limits: ${usage.message} (see listing-limits --help)\n`);
    return EXIT.usage;
  }

  const { json, dryRun, options } = parsed;
  const listing = String(options.listing);
  if (dryRun) {
    stdout.write(json ? `${JSON.stringify(plan, null, 2)}\n` : planText(plan, listing));
    return EXIT.pass;
  }
  const progress = progressOn(stderr, plan);
  let report: VerifyReport;
  try {
    report = await verifyContract({
      ...options,
      ...(context.fetch && { fetch: context.fetch }),
      ...(context.sleep && { sleep: context.sleep }),
      ...(context.now && { now: context.now }),
      onProgress: progress.onEvent,
    });
  } finally {
    progress.stop();
  }
  stdout.write(json ? `${JSON.stringify(report, null, 2)}\n` : reportText(report, listing));
  return report.ok ? EXIT.pass : EXIT.fail;
}
