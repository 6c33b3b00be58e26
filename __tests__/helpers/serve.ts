// Serves an app on a loopback port for tests that talk to it over real sockets, as a deployed API would be.
import { createServer, type RequestListener } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Served {
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
  /** Requests received so far. */
  readonly requests: number;
  /** Every answered request, in order: `<status> <method> <url> <Authorization or ->`. */
  readonly log: readonly string[];
  close(): Promise<void>;
}

/** Listens on 127.0.0.1 with a free port, and counts and logs the requests. */
export async function serve(app: RequestListener): Promise<Served> {
  let requests = 0;
  const log: string[] = [];
  const server = createServer((req, res) => {
    requests++;
    res.on('finish', () => log.push(`${res.statusCode} ${req.method} ${req.url} ${req.headers.authorization ?? '-'}`));
    app(req, res);
  });
  await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    get requests() {
      return requests;
    },
    log,
    close: () =>
      new Promise<void>((closed) => {
        server.closeAllConnections();
        server.close(() => closed());
      }),
  };
}

/** `start(app)` for the tests of one file: it serves `app`, and every server it started is closed after each test. */
export function serverPerTest(): (app: RequestListener) => Promise<Served> {
  const servers: Served[] = [];
  afterEach(() => Promise.all(servers.splice(0).map((s) => s.close())));
  return async (app) => {
    const served = await serve(app);
    servers.push(served);
    return served;
  };
}
