// The command's progress bars, from cli-progress, an optional peer dependency: without it the command writes lines.
// A CommonJS module in both builds, so that the bars are loaded synchronously, or found missing, wherever it runs.
import type { MultiBar as Bars } from 'cli-progress';

export const MultiBar: typeof Bars | undefined = (() => {
  try {
    require.resolve('cli-progress');
  } catch {
    return undefined;
  }
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return require('cli-progress').MultiBar;
})();
