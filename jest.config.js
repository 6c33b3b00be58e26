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
  // One line when the Redis tests cannot run here: skipped on a developer's machine, failing under CI.
  globalSetup: '<rootDir>/__tests__/helpers/global-setup.ts',
};
