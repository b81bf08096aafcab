import {
  patched,
  proxyActivities,
  proxyLocalActivities,
  upsertMemo,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import { SEARCH_ATTRIBUTES } from '../../core/temporal';
import type { shapeActivities } from './activities';

/**
 * The shapes bench/temporal runs a page through (P6), each a workflow whose activities do no
 * work, so that what a run costs is the orchestration's alone: the Temporal server, its
 * PostgreSQL, and the SDK in the bench's process.
 */

type Activities = ReturnType<typeof shapeActivities>;

const local = proxyLocalActivities<Activities>({ startToCloseTimeout: '30s' });
const engine = proxyActivities<Activities>({
  startToCloseTimeout: '2h',
  heartbeatTimeout: '30s',
  retry: { maximumAttempts: 1 },
});

/** T1's floor: one workflow per page that returns in its first workflow task. */
export async function emptyShape(): Promise<void> {}

/**
 * Today's page (transcriptionJob since D14): the release marker, the status patch's and the
 * stage in the first task with the local claim; the engine step as an activity that
 * heartbeats once at its start; the end's stage in the second task. No status upsert.
 */
export async function quireShape(): Promise<void> {
  patched('bench-release');
  patched('bench-status-in-database');
  await local.claim();
  upsertMemo({ stage: 'segment' });
  await engine.engineStep(true);
  upsertMemo({ stage: 'done' });
}

/** The page before D14: the status upserted as a search attribute at the start and the end. */
export async function quireWithStatusShape(): Promise<void> {
  await opening();
  await engine.engineStep(true);
  closing();
}

/** The page before D14 without the engine step's first heartbeat. */
export async function quireNoHeartbeatShape(): Promise<void> {
  await opening();
  await engine.engineStep(false);
  closing();
}

/** The engine step as a local activity: the whole page in one workflow task. */
export async function localShape(): Promise<void> {
  await opening();
  await local.localEngineStep();
  closing();
}

async function opening(): Promise<void> {
  patched('bench-release');
  await local.claim();
  upsertSearchAttributes([{ key: SEARCH_ATTRIBUTES.status, value: 'running' }]);
  upsertMemo({ stage: 'segment' });
}

function closing(): void {
  upsertSearchAttributes([{ key: SEARCH_ATTRIBUTES.status, value: 'completed' }]);
  upsertMemo({ stage: 'done' });
}
