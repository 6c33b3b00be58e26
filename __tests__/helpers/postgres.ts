// A real PostgreSQL for the tests: a throwaway cluster (initdb in a temp dir) on a free port, stopped and paused at will.
import { type ChildProcess, execFileSync } from 'node:child_process';
import { chownSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bin, postgresMissing } from './postgres-env';
import { freePort, onFreePort, startServer } from './redis';
import { inCI } from './redis-env';

/** `describe` for tests that start their own PostgreSQL; skipped without one, but never under CI. */
export const describePostgres = postgresMissing && !inCI ? describe.skip : describe;

/** PostgreSQL refuses to run as root: as root, it runs as the `postgres` user, which owns its temp dir. */
function runAs(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const entry = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .map((line) => line.split(':'))
    .find(([name]) => name === 'postgres');
  if (!entry) throw new Error('Cannot run PostgreSQL as root, and there is no `postgres` user to run it as.');
  return { uid: Number(entry[2]), gid: Number(entry[3]) };
}

/** One PostgreSQL cluster on 127.0.0.1, in its own temp dir, trusting local connections, without fsync. */
export class PostgresServer {
  private process: ChildProcess | undefined;

  private constructor(
    readonly port: number,
    private readonly dir: string,
    private readonly user: { uid: number; gid: number } | undefined,
  ) {}

  /** Makes a cluster (initdb) and starts it on a free port. */
  static async start(): Promise<PostgresServer> {
    if (!bin) throw new Error(`Cannot start PostgreSQL for the tests: ${postgresMissing}.`);
    const user = runAs();
    const dir = mkdtempSync(join(tmpdir(), 'listing-limits-postgres-'));
    if (user) chownSync(dir, user.uid, user.gid);
    const initdb = ['-D', join(dir, 'data'), '-U', 'postgres', '-A', 'trust', '--no-sync', '--no-instructions'];
    execFileSync(join(bin, 'initdb'), initdb, { ...user, cwd: dir, stdio: 'pipe', timeout: 60_000 });
    return onFreePort(async () => {
      const server = new PostgresServer(await freePort(), dir, user);
      try {
        await server.start();
        return server;
      } catch (error) {
        await server.stop();
        throw error;
      }
    });
  }

  get url(): string {
    return `postgresql://postgres@127.0.0.1:${this.port}/postgres`;
  }

  /** Starts the server again (after `stop()`), on the same port and data. */
  async start(): Promise<void> {
    const settings = ['listen_addresses=127.0.0.1', `unix_socket_directories=${this.dir}`, 'fsync=off'];
    const args = ['-D', join(this.dir, 'data'), '-p', String(this.port), ...settings.flatMap((s) => ['-c', s])];
    const ready = 'database system is ready to accept connections';
    this.process = await startServer(join(bin as string, 'postgres'), args, ready, { ...this.user, cwd: this.dir });
  }

  /** Stops the server at once (immediate shutdown): connections drop; the data stays for `start()`. */
  async stop(): Promise<void> {
    const child = this.process;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    this.resume(); // a paused server ends too
    this.process = undefined;
    child.kill('SIGQUIT');
    await exited;
  }

  /** Freezes the server and its backends (SIGSTOP): connections stay open, but nothing is answered. */
  pause(): void {
    this.signal('SIGSTOP');
  }

  resume(): void {
    this.signal('SIGCONT');
  }

  /** Signals the server and its backends, each a process group of its own (PostgreSQL calls setsid()). */
  private signal(signal: NodeJS.Signals): void {
    const pid = this.process?.pid;
    if (pid === undefined) return;
    const children = readdirSync('/proc').filter((name) => {
      if (!/^\d+$/.test(name)) return false;
      try {
        // The fields after the command's closing parenthesis: state, then the parent's pid.
        const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
        return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid;
      } catch {
        return false; // ended meanwhile
      }
    });
    for (const child of [pid, ...children.map(Number)]) {
      try {
        process.kill(child, signal);
      } catch {
        // ended meanwhile
      }
    }
  }

  /** Stops the server for good and removes its dir. */
  async close(): Promise<void> {
    await this.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }
}
