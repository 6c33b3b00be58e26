/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/__tests__'],
  testMatch: ['**/*.test.ts'],
  transform: { '^.+\\.ts$': ['ts-jest', { diagnostics: false }] },
  // lib/ imports name their .js output, as ES modules need; the tests load the .ts sources.
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  testTimeout: 30000,
  // One line when the Redis tests cannot run here: skipped on a developer's machine, failing under CI.
  globalSetup: '<rootDir>/__tests__/helpers/global-setup.ts',
};
