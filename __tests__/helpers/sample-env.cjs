// What a sample of the manual finds around it when __tests__/readme-samples.test.ts runs it as a program of its own
// (node --require this): the sample's code is run as written, only the world it talks to is the test's.
// - A server it starts on a fixed port (`app.listen(3000)`) listens on a free one instead, told on stderr as
//   `@@listening <port>`, so that runs never collide with each other or with what else the machine serves.
// - `fetch` to an origin of SAMPLE_ORIGINS (JSON: `{ "https://api.example.org": "http://127.0.0.1:4567" }`) goes to
//   the API the test serves for it.
// - With SAMPLE_JEST=1, `it` and `expect` are Jest's as a test file of the user's suite would have them: each test
//   runs at once, and `@@passed <name>` or a failure on stderr (exit code 1) tells how it went.
const net = require('node:net');

const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function listenOnAFreePort(...args) {
  if (typeof args[0] === 'number') args[0] = 0;
  this.once('listening', () => process.stderr.write(`@@listening ${this.address().port}\n`));
  return listen.apply(this, args);
};

const origins = JSON.parse(process.env.SAMPLE_ORIGINS ?? '{}');
const fetch = globalThis.fetch;
globalThis.fetch = (input, init) => {
  const url = new URL(input instanceof Request ? input.url : String(input));
  const to = origins[url.origin];
  if (!to) return fetch(input, init);
  const moved = new URL(`${url.pathname}${url.search}`, to);
  return fetch(input instanceof Request ? new Request(moved, input) : moved, init);
};

if (process.env.SAMPLE_JEST === '1') {
  globalThis.expect = require('expect').expect;
  globalThis.it = (name, test) => {
    Promise.resolve()
      .then(test)
      .then(
        () => process.stderr.write(`@@passed ${name}\n`),
        (error) => {
          process.stderr.write(`@@failed ${name}: ${error?.stack ?? error}\n`);
          process.exitCode = 1;
        },
      );
  };
}
