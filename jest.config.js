/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/__tests__'],
  testMatch: ['**/*.test.ts'],
  transform: { '^.+\\.c?ts$': ['ts-jest', { diagnostics: false }] },
  // lib/ imports name their .js (and .cjs) output, as ES modules need; the tests load the .ts (and .cts) sources.
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.c?js$': '$1' },
  moduleFileExtensions: ['ts', 'cts', 'js', 'cjs', 'json', 'node'],
  testTimeout: 30000,
  // Most test files wait on other processes and real time, not on a CPU: two at once even on 2 CPUs (Jest's default
  // there is one).
  maxWorkers: Math.max(2, require('node:os').availableParallelism() - 1),
  // One line when the Redis tests cannot run here: skipped on a developer's machine, failing under CI.
  globalSetup: '<rootDir>/__tests__/helpers/global-setup.ts',
};
