// Starts an API that logs each request it answers (world-api-child.js, table-server.js) in a process of its own, and
// reads what it answered: the server's word, not the client's.
import { launch, type Launched } from './launch';
import type { WorldSpec } from './world-apis';

export interface Answered {
  readonly status: number;
  readonly method: string;
  readonly url: string;
  readonly authorization: string | null;
}

export interface WorldProcess extends Launched {
  readonly url: string;
  /** Every request the API answered, in order, as it logged them. */
  readonly answered: Answered[];
  /** Resolves once the API has logged every request answered so far: it logs a request of its own after them. */
  settled(): Promise<void>;
}

/** Starts `script` with `args`: a script that prints {"port"} once it listens, then a line per request answered. */
export async function startLoggedApi(script: string, args: readonly string[]): Promise<WorldProcess> {
  const answered: Answered[] = [];
  const launched = await launch(script, args, (message: { port?: number } & Answered) => {
    if (!message.port) answered.push(message);
    return message.port;
  });
  const url = `http://127.0.0.1:${launched.started}`;
  return {
    ...launched,
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
  };
}

/** An API of world-apis.js. */
export const startWorldApi = (spec: WorldSpec): Promise<WorldProcess> =>
  startLoggedApi('world-api-child.js', [JSON.stringify(spec)]);
