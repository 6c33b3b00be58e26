// Starts an API of world-apis.js in a process of its own (world-api-child.js), and reads what it answered: the
// server's word, not the client's.
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { WorldSpec } from './world-apis';

export interface Answered {
  readonly status: number;
  readonly method: string;
  readonly url: string;
  readonly authorization: string | null;
}

export interface WorldProcess {
  readonly url: string;
  /** Every request the API answered, in order, as it logged them. */
  readonly answered: Answered[];
  /** Resolves once the API has logged every request answered so far: it logs a request of its own after them. */
  settled(): Promise<void>;
  stderr(): string;
  stop(): Promise<void>;
}

const root = join(__dirname, '..', '..');

export async function startWorldApi(spec: WorldSpec): Promise<WorldProcess> {
  const script = join(__dirname, 'world-api-child.js');
  const child: ChildProcessWithoutNullStreams = spawn(process.execPath, [script, JSON.stringify(spec)], { cwd: root });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = once(child, 'exit');
  const answered: Answered[] = [];
  const port = await new Promise<number>((resolve, reject) => {
    createInterface({ input: child.stdout }).on('line', (line) => {
      const message = JSON.parse(line) as { port?: number } & Answered;
      if (message.port) resolve(message.port);
      else answered.push(message);
    });
    void exited.then(([code]) => reject(new Error(`the API exited with ${code} before it listened:\n${stderr}`)));
  });
  const url = `http://127.0.0.1:${port}`;
  return {
    url,
    answered,
    async settled() {
      const end = `/settled-${answered.length}-${Date.now()}`;
      await fetch(`${url}${end}`).then((res) => res.body?.cancel());
      for (let i = 0; i < 500 && answered.at(-1)?.url !== end; i++) {
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      if (answered.at(-1)?.url !== end) throw new Error(`the API did not log ${end}`);
      answered.pop();
    },
    stderr: () => stderr,
    async stop() {
      child.stdin.end();
      if (child.exitCode === null) await exited;
    },
  };
}
