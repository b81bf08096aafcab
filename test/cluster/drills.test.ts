import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Pool } from '../../db/pool';
import { startTestCluster, type TestCluster } from '../support/cluster';
import { eventually } from '../support/wait';

/**
 * D3 failure drills on the production topology (D2): three worker processes, two web
 * replicas, the Temporal server on its own PostgreSQL, the object server, the simulated
 * engine. One cluster serves the drills of this file, one after another; each drill runs a
 * batch, injects its fault mid-batch, and ends with D3's verdict: every job committed exactly
 * once, the invariant auditor clean, every webhook delivery done. Fault lengths are short and
 * configurable (QUIRE_DRILL_OUTAGE_MS); each drill prints its recovery time.
 */
const OUTAGE_MS = Number(process.env.QUIRE_DRILL_OUTAGE_MS ?? 5_000);
const BATCH = Number(process.env.QUIRE_DRILL_BATCH ?? 12);
const SIMULATED = { lines: 12, latencyMs: 150 };
let t: TestCluster;

beforeAll(async () => {
  t = await startTestCluster();
}, 900_000);
afterAll(async () => {
  await t?.close();
});

/** Resolves once any of `jobIds` has at least `segments` recognized lines. */
async function midBatch(pool: Pool, jobIds: string[], segments = 3): Promise<void> {
  await eventually(
    async () => {
      const { rows } = await pool.query(
        'SELECT 1 FROM transcription_jobs WHERE id = ANY($1) AND completed_segments >= $2 LIMIT 1',
        [jobIds, segments],
      );
      return rows.length > 0 ? true : undefined;
    },
    120_000,
    100,
  );
}

/** Seconds from `faultAt` until a job of the batch commits (D3 recovery, reported). */
async function recoverySeconds(pool: Pool, jobIds: string[], faultAt: Date): Promise<number> {
  await eventually(
    async () => {
      const { rows } = await pool.query(
        `SELECT 1 FROM transcription_jobs WHERE id = ANY($1) AND status = 'completed' AND ended_at > $2 LIMIT 1`,
        [jobIds, faultAt],
      );
      return rows.length > 0 ? true : undefined;
    },
    180_000,
    100,
  );
  return (Date.now() - faultAt.getTime()) / 1000;
}

function report(drill: string, figures: Record<string, number>): void {
  process.stdout.write(`${JSON.stringify({ drill, ...figures })}\n`);
}

describe('failure drills on the production topology (D3)', () => {
  it('D3 two of three workers SIGKILLed mid-batch: the third finishes, every job committed once, auditor clean, deliveries complete', async () => {
    const { workspaceId } = await t.workspace();
    const jobIds = await t.startBatch(workspaceId, BATCH, SIMULATED);
    await midBatch(t.pool, jobIds);
    const faultAt = new Date();
    await Promise.all([
      t.cluster.workers[0]!.kill('SIGKILL'),
      t.cluster.workers[1]!.kill('SIGKILL'),
    ]);
    const recovered = await recoverySeconds(t.pool, jobIds, faultAt);
    await t.untilCompleted(workspaceId, jobIds);
    report('worker-sigkill', { recoverySeconds: recovered, jobs: jobIds.length });
    await t.verify(workspaceId, jobIds);
    // Some attempt was cut off by the kills and closed lease_expired, never written twice.
    const { rows } = await t.pool.query(
      `SELECT count(*)::int AS n FROM transcription_job_attempts WHERE job_id = ANY($1) AND outcome = 'lease_expired'`,
      [jobIds],
    );
    expect(rows[0].n).toBeGreaterThan(0);
    await Promise.all([t.cluster.workers[0]!.start(), t.cluster.workers[1]!.start()]);
  });

  it('D3 the Temporal server stopped and restarted mid-batch: history on PostgreSQL survives, jobs continue, each committed once', async () => {
    const { workspaceId } = await t.workspace();
    const jobIds = await t.startBatch(workspaceId, BATCH, SIMULATED);
    await midBatch(t.pool, jobIds);
    const faultAt = new Date();
    await t.cluster.temporal.stop(30_000);
    await new Promise((resolve) => setTimeout(resolve, OUTAGE_MS));
    await t.cluster.temporal.start();
    const recovered = await recoverySeconds(t.pool, jobIds, faultAt);
    await t.untilCompleted(workspaceId, jobIds);
    report('temporal-restart', { recoverySeconds: recovered, outageMs: OUTAGE_MS });
    await t.verify(workspaceId, jobIds);
    for (const worker of t.cluster.workers) expect(worker.running()).toBe(true);
  });

  it('D3 PostgreSQL restarted mid-batch (immediate stop, crash recovery): jobs continue, each committed once', async () => {
    const { workspaceId } = await t.workspace();
    const jobIds = await t.startBatch(workspaceId, BATCH, SIMULATED);
    await midBatch(t.pool, jobIds);
    const faultAt = new Date();
    t.cluster.postgres.stop('immediate');
    await new Promise((resolve) => setTimeout(resolve, OUTAGE_MS));
    t.cluster.postgres.start();
    const recovered = await recoverySeconds(t.pool, jobIds, faultAt);
    await t.untilCompleted(workspaceId, jobIds);
    report('postgres-restart', { recoverySeconds: recovered, outageMs: OUTAGE_MS });
    await t.verify(workspaceId, jobIds);
    for (const worker of t.cluster.workers) expect(worker.running()).toBe(true);
    for (const web of t.cluster.webs) expect(web.running()).toBe(true);
  });
});
