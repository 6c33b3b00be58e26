// `.ci/run`'s totals: `node scripts/ci-totals.js <folder> <version>...` reads Jest's JSON results, <folder>/<version>.json,
// prints one line per Node.js version and then the sum, `N passed, N failed`, as CI's last line; exits 1 when a
// run failed. Jest that stops early writes no results, or results where a file that failed to run (it does not
// compile, its set-up crashed) counts no failed test: each such file counts as one failure, and so does a version
// without results.
const { readFileSync } = require('node:fs');
const { join } = require('node:path');

const [folder, ...versions] = process.argv.slice(2);
const sum = { passed: 0, failed: 0, skipped: 0 };
let success = true;
for (const version of versions) {
  let r;
  try {
    r = JSON.parse(readFileSync(join(folder, `${version}.json`), 'utf8'));
  } catch {
    r = undefined;
  }
  if (r?.numTotalTests === undefined) {
    console.log(`Node.js ${version}: jest wrote no results, counted as one failure`);
    sum.failed += 1;
    success = false;
    continue;
  }
  const broken = r.numRuntimeErrorTestSuites;
  const failed = r.numFailedTests + broken;
  const skipped = r.numPendingTests + r.numTodoTests;
  const notes = [skipped && `${skipped} skipped`, broken && `${broken} file${broken === 1 ? '' : 's'} failed to run`];
  console.log(
    `Node.js ${version}: ${[`${r.numPassedTests} passed`, `${failed} failed`, ...notes.filter(Boolean)].join(', ')}`,
  );
  sum.passed += r.numPassedTests;
  sum.failed += failed;
  sum.skipped += skipped;
  success &&= r.success;
}
console.log(`${sum.passed} passed, ${sum.failed} failed${sum.skipped ? `, ${sum.skipped} skipped` : ''}`);
if (!success) process.exit(1);
