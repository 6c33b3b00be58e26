// Starts a script of this folder in a Node process of its own, reads the JSON lines it prints, and ends it.
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

/** Bounds for a hang, not speeds the machine must keep: a start, and an end once standard input closes. */
const START_MS = 60_000;
const END_MS = 20_000;

export interface Launched {
  readonly child: ChildProcessWithoutNullStreams;
  stderr(): string;
  /** Closes its standard input and resolves once it has exited; rejects if it had to be killed. */
  stop(): Promise<void>;
}

/**
 * Starts `script` with `args`, giving each JSON line it prints to `onLine` (another line counts as stderr). Resolves
 * once `onLine` returns a value, with it as `started`; rejects, with its stderr, if it exits first or takes 60 s.
 */
export async function launch<T, M>(
  script: string,
  args: readonly string[],
  onLine: (message: M) => T | undefined,
): Promise<Launched & { started: T }> {
  const root = join(__dirname, '..', '..');
  const child = spawn(process.execPath, [join(__dirname, script), ...args], { cwd: root });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = once(child, 'exit');
  const started = await new Promise<T>((resolve, reject) => {
    const limit = setTimeout(() => child.kill('SIGKILL'), START_MS);
    createInterface({ input: child.stdout }).on('line', (line) => {
      let message: M;
      try {
        message = JSON.parse(line) as M;
      } catch {
        stderr += `not JSON on stdout: ${line}\n`;
        return;
      }
      const value = onLine(message);
      if (value === undefined) return;
      clearTimeout(limit);
      resolve(value);
    });
    exited.then(
      ([code, signal]) => reject(new Error(`${script} exited (${code ?? signal}) before it started:\n${stderr}`)),
      reject,
    );
  });
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.stdin.end();
    const limit = setTimeout(() => child.kill('SIGKILL'), END_MS);
    const [, signal] = await exited;
    clearTimeout(limit);
    if (signal === 'SIGKILL') throw new Error(`${script} did not end within ${END_MS} ms of its input closing`);
  };
  return { child, started, stderr: () => stderr, stop };
}
