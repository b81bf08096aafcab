import { resolve } from 'node:path';
import { buildWorker } from './lib/workerBuild';

/**
 * Compiles the worker (container images, `npm run worker`, other hosts); run it with
 * `node .worker-build/main.mjs`. The path goes to stderr: `npm run worker -- health` prints
 * only the health record on stdout.
 */
const output = buildWorker(resolve('.'));
process.stderr.write(`${JSON.stringify({ worker: output })}\n`);
