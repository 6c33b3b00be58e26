// The paced load of bench/sliced.js: autocannon at a fixed rate that no server saturates, so that each request is
// served alone. Connection i sends `Authorization: Bot bench-token-<i>`, as bench/clients.lua does for wrk.
// `node bench/paced.js <url> <requests per second> <seconds> <clients>` prints `{ requests, non2xx, socketErrors }`.
const autocannon = require('autocannon');

const [url, rate, seconds, clients] = process.argv.slice(2);
let next = 0;
autocannon(
  {
    url,
    connections: Number(clients),
    overallRate: Number(rate),
    duration: Number(seconds),
    requests: [
      {
        setupRequest: (request, context) => {
          context.token ??= `Bot bench-token-${(next++ % Number(clients)) + 1}`;
          return { ...request, headers: { ...request.headers, authorization: context.token } };
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
