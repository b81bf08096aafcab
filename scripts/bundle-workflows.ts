import { writeFileSync } from 'node:fs';
import { bundleWorkflowCode } from '@temporalio/worker';
import { WORKFLOWS_PATH } from '../worker/createWorker';

/** Bundles the workflows once (container images); the worker loads it via QUIRE_WORKFLOW_BUNDLE. */
const target = process.argv[2] ?? 'workflow-bundle.js';
const { code } = await bundleWorkflowCode({ workflowsPath: WORKFLOWS_PATH });
writeFileSync(target, code);
process.stdout.write(`${JSON.stringify({ bundle: target, bytes: code.length })}\n`);
