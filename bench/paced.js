// The paced load of bench/sliced.js: autocannon at a fixed rate on one connection, so that each request is served
// alone (several connections fire in bursts). Request i sends `Authorization: Bot bench-token-<i mod clients + 1>`,
// the tokens bench/clients.lua gives wrk's connections.
// `node bench/paced.js <url> <requests per second> <seconds> <clients>` prints `{ requests, non2xx, socketErrors }`.
const autocannon = require('autocannon');

const [url, rate, seconds, clients] = process.argv.slice(2);
let next = 0;
autocannon(
  {
    url,
    connections: 1,
    overallRate: Number(rate),
    duration: Number(seconds),
    requests: [
      {
        setupRequest: (request) => {
          const authorization = `Bot bench-token-${(next++ % Number(clients)) + 1}`;
          return { ...request, headers: { ...request.headers, authorization } };
        },
      },
    ],
  },
  (error, result) => {
    if (error) throw error;
    const socketErrors = result.errors + result.timeouts;
    process.stdout.write(
      `${JSON.stringify({ requests: result.requests.total, non2xx: result.non2xx, socketErrors })}\n`,
    );
  },
);
