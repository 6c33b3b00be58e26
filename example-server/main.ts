// The example server from the command line (`npm start`): settings from the environment, one or both listings, clean stop on SIGINT and SIGTERM.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createExampleApp, PAGES } from './app.js';
import { listingFamilies, type ListingName, listings } from '../lib/index.js';
import { type Listener, StartupError, type StoreChoice, startupFromEnv, storeFromEnv } from './env.js';

/**
 * A path worth trying on a listing, from its table: the first GET endpoint with a parameter (`/v1/bots/1`), and
 * what it lists (`bots`).
 */
function example(listing: ListingName): { path: string; family: string } {
  const rows = listings[listing];
  const row = rows.find((r) => r.method === 'GET' && r.path.includes('/:')) ?? rows[0];
  const path = (row?.path ?? '/').replace(/:\w+/g, '1');
  return { path, family: listingFamilies[listing] };
}

/** Why listening failed, said in terms of the variable to change. */
function listenError(error: NodeJS.ErrnoException, { port, portVariable }: Listener, host: string): Error {
  switch (error.code) {
    case 'EADDRINUSE':
      return new StartupError(`Port ${port} is already in use; set ${portVariable} to a free port (0 picks one).`);
    case 'EACCES':
      return new StartupError(`Port ${port} needs privileges this process lacks; set ${portVariable} to 1024 or more.`);
    case 'EADDRNOTAVAIL':
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return new StartupError(`HOST ${JSON.stringify(host)} is not an address of this machine.`);
    default:
      return new StartupError(`Cannot listen on ${host} port ${port} (HOST, ${portVariable}): ${error.message}`);
  }
}

function listen(server: Server, listener: Listener, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', (error) => reject(listenError(error, listener, host)));
    server.listen(listener.port, host, resolve);
  });
}

function close(server: Server): Promise<void> {
  return new Promise((resolve) => {
    if (!server.listening) return resolve();
    server.close(() => resolve());
    server.closeIdleConnections();
  });
}

function baseUrl(server: Server): string {
  const { address, family, port } = server.address() as AddressInfo;
  const host = address === '0.0.0.0' || address === '::' ? 'localhost' : family === 'IPv6' ? `[${address}]` : address;
  return `http://${host}:${port}`;
}

async function main(): Promise<void> {
  const servers: Server[] = [];
  let stores: StoreChoice | undefined;
  const stop = async () => {
    await Promise.all(servers.map(close));
    await stores?.close();
  };

  const lines: string[] = [];
  try {
    const startup = startupFromEnv(process.env);
    stores = storeFromEnv(process.env);
    await stores.ready();
    const log = startup.log ? (line: string) => console.log(line) : undefined;
    for (const listener of startup.listeners) {
      const { listing } = listener;
      const { window, adminToken } = startup;
      const app = createExampleApp({ listing, store: stores.forListing(listing), log, window, adminToken });
      const server = createServer(app);
      servers.push(server);
      await listen(server, listener, startup.host);
      const url = baseUrl(server);
      const { path, family } = example(listing);
      lines.push(`  listing ${listing} (${family}) at ${url}  try: curl -i ${url}${path}`);
      const admin = adminToken ? `operator's page ${url}${PAGES.admin}` : "operator's page off (set ADMIN_TOKEN)";
      lines.push(`    contact page ${url}${PAGES.request}, ${admin}`);
    }
    const logState = startup.log ? 'access log on (LOG=0 turns it off)' : 'access log off';
    const windows = startup.window === 'sliding' ? ', sliding windows' : '';
    console.log(`listing-limits example server: ${stores.description}${windows}, ${logState}.`);
  } catch (error) {
    await stop();
    if (!(error instanceof StartupError)) throw error;
    console.error(`example-server: ${error.message}`);
    process.exitCode = 1;
    return;
  }
  console.log(`${lines.join('\n')}\nStop it with Ctrl-C.`);

  let stopping = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (stopping) {
      console.error(`example-server: ${signal} again, stopping at once.`);
      process.exit(1);
    }
    stopping = true;
    console.log(`example-server: ${signal}, closing.`);
    stop().then(
      () => console.log('example-server: closed.'),
      (error: unknown) => {
        console.error(`example-server: could not close cleanly: ${error instanceof Error ? error.message : error}`);
        process.exitCode = 1;
      },
    );
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
}

void main();
