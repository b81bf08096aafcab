import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';

/**
 * P6: the worker runs as one compiled ES module rather than through `tsx`, whose loader
 * hooks and source-map support stay in the process for its whole life. esbuild (the compiler
 * `tsx` itself runs on, reached through it so the dependency is declared once) bundles our
 * code and leaves every npm package external, in well under a second, so it is done at each
 * start and the output is never stale.
 *
 * The output sits one folder below the repository root, as `worker/`, `db/` and `providers/`
 * do: the paths our modules derive from `import.meta.url` (the workflow sources, the
 * migrations, the engines' model data) then resolve to the same files as from the sources.
 */
export const WORKER_BUILD_DIR = '.worker-build';
const ENTRY = 'worker/main.ts';
const OUTPUT = 'main.mjs';

/** Builds the worker into `<root>/.worker-build/main.mjs` and returns that path. */
export function buildWorker(root: string): string {
  const esbuild = createRequire(createRequire(join(root, 'package.json')).resolve('tsx'))(
    'esbuild',
  ) as typeof import('esbuild');
  const dir = join(root, WORKER_BUILD_DIR);
  const output = join(dir, OUTPUT);
  const result = esbuild.buildSync({
    absWorkingDir: root,
    entryPoints: [ENTRY],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    packages: 'external',
    outfile: output,
    write: false,
    logLevel: 'silent',
  });
  mkdirSync(dir, { recursive: true });
  // Written aside and renamed: another process starting a worker at the same moment reads
  // either the previous build or this one, never half of one.
  const temporary = `${output}.${process.pid}.tmp`;
  writeFileSync(temporary, result.outputFiles[0]!.contents);
  renameSync(temporary, output);
  return output;
}

/** The worker's command line after `node`: the compiled entry, built now. */
export function workerArgs(root: string): string[] {
  return [buildWorker(root)];
}
