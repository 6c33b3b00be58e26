#!/usr/bin/env node
// The `listing-limits` executable: runs the command line with this process's arguments and streams.
import { runCli } from './verify/command.js';

runCli(process.argv.slice(2), { stdout: process.stdout, stderr: process.stderr }).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(
      `listing-limits: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    process.exitCode = 1;
  },
);
