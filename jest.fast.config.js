// `npm run test:fast`: the test files that start no process, build nothing, drive no browser and need no
// redis-server; those of __tests__/helpers/slow-tests.js are left out. `npm test` runs every file.
const config = require('./jest.config');
const slow = require('./__tests__/helpers/slow-tests');

const escaped = (name) => name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** @type {import('jest').Config} */
module.exports = {
  ...config,
  testPathIgnorePatterns: ['/node_modules/', ...Object.keys(slow).map((name) => `/__tests__/${escaped(name)}$`)],
};
