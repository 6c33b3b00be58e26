#!/usr/bin/env node
// The `listing-limits` executable: runs the command line with this process's arguments and streams.
import { runCli } from './verify/command.js';

// Failure until the command says otherwise: a process that ends before the run has settled has checked nothing.
process.exitCode = 1;
let settled = false;
process.once('beforeExit', () => {
  if (!settled) process.stderr.write('listing-limits: the run ended before every check had settled\n');
});

runCli(process.argv.slice(2), { stdout: process.stdout, stderr: process.stderr }).then(
  (code) => {
    settled = true;
    process.exitCode = code;
  },
  (error: unknown) => {
    settled = true;
    process.stderr.write(
      `listing-limits: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    process.exitCode = 1;
  },
);
