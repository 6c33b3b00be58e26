// An API of world-apis.js in a Node process of its own, for the real-time tests of the verifier and the client.
// Argument: <JSON: { kind, rows, fault? }> (see world-apis.js). Prints JSON lines to stdout: {"port":n} once it
// listens, then {"status","method","url","authorization"} for each request answered: what the server counted, in
// order. It ends when its standard input closes.
const http = require('node:http');
const { worldApi } = require('./world-apis.js');

worldApi(JSON.parse(process.argv[2])).then((listener) => {
  const server = http.createServer((req, res) => {
    res.on('finish', () => {
      const { method, url } = req;
      const authorization = req.headers.authorization ?? null;
      console.log(JSON.stringify({ status: res.statusCode, method, url, authorization }));
    });
    listener(req, res);
  });
  server.listen(0, '127.0.0.1', () => console.log(JSON.stringify({ port: server.address().port })));
  process.stdin.on('end', () => {
    server.closeAllConnections();
    server.close();
  });
  process.stdin.resume();
});
