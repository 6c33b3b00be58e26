// A CPU profile of this process over a chosen span, written as a .cpuprofile: for bench/server.js under load.
const { Session } = require('node:inspector');
const { writeFileSync } = require('node:fs');

const INTERVAL_US = 200;

function profiler(file) {
  const session = new Session();
  session.connect();
  const post = (method, params) =>
    new Promise((resolve, reject) =>
      session.post(method, params, (error, result) => (error ? reject(error) : resolve(result))),
    );
  let started;
  return {
    start: () => {
      started = post('Profiler.enable')
        .then(() => post('Profiler.setSamplingInterval', { interval: INTERVAL_US }))
        .then(() => post('Profiler.start'));
    },
    stop: async () => {
      if (!started) return;
      await started;
      const { profile } = await post('Profiler.stop');
      writeFileSync(file, JSON.stringify(profile));
    },
  };
}

module.exports = { profiler, INTERVAL_US };
