import { EventSource } from 'eventsource';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { runBlobCleanup, sweepOrphans } from '../../activities/maintenance';
import { createBlobStore } from '../../blobs/fromConfig';
import { QUIRE_EVENT_TYPES } from '../../core/cloudevents';
import { workspaceUsageBytes } from '../../db/blobs';
import { sequenceEvents } from '../../db/events';
import type { Pool } from '../../db/pool';
import type { ManagedProcess } from '../../scripts/lib/processes';
import { storedImagePage } from '../support/blobReferences';
import { startTestCluster, type TestCluster } from '../support/cluster';
import { file, png, uploadRequest, wav } from '../support/uploadFixtures';
import { eventually } from '../support/wait';

type WebProcess = ManagedProcess & { url: string };
const STREAM_TYPES = ['dev.quire.stream.ready', 'dev.quire.stream.checkpoint'];

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
const STORE_OUTAGE_MS = Number(process.env.QUIRE_DRILL_STORE_OUTAGE_MS ?? 20_000);
const SIMULATED = { lines: 12, latencyMs: 150 };
const HOUR = 60 * 60 * 1000;
let t: TestCluster;

beforeAll(async () => {
  t = await startTestCluster();
}, 900_000);
afterAll(async () => {
  await t?.close();
});
// A drill that fails midway must not leave its fault in place for the next one.
afterEach(async () => {
  const { cluster } = t;
  if (!cluster.postgres.running()) cluster.postgres.start();
  for (const process of [
    cluster.objectServer,
    cluster.temporal,
    ...cluster.webs,
    ...cluster.workers,
  ])
    await process.start();
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

/**
 * The jobs of `jobIds` that ended while the object server was down, with what tells how: their
 * attempts and steps (which worker), the engine calls they paid for, each at its offset from
 * the fault, and whether anything answered on the object server's port meanwhile.
 */
async function jobsEndedDuring(t: TestCluster, jobIds: string[], faultAt: Date) {
  const at = (column: string) =>
    `round(extract(epoch FROM ${column} - $2::timestamptz)::numeric, 2)`;
  const { rows: jobs } = await t.pool.query(
    `SELECT j.id, j.status, j.stage, ${at('j.ended_at')} AS ended_s,
            (SELECT json_agg(json_build_object('n', a.attempt_number, 'owner', a.owner,
                     'outcome', a.outcome, 'started_s', ${at('a.started_at')}))
               FROM transcription_job_attempts a WHERE a.job_id = j.id) AS attempts,
            (SELECT json_agg(json_build_object('step', s.step, 'worker', s.worker,
                     'outcome', s.outcome, 'finished_s', ${at('s.finished_at')}))
               FROM attempt_steps s WHERE s.job_id = j.id) AS steps,
            (SELECT json_agg(json_build_object('operation', c.operation,
                     'at_s', ${at('c.occurred_at')}))
               FROM provider_calls c WHERE c.job_id = j.id) AS calls
       FROM transcription_jobs j
      WHERE j.id = ANY($1) AND j.status NOT IN ('pending', 'running')`,
    [jobIds, faultAt],
  );
  const { port } = t.cluster.objectStore;
  const answered = await fetch(`http://127.0.0.1:${port}/`).then(
    (r) => r.status,
    () => null,
  );
  return { jobs, objectServer: { running: t.cluster.objectServer.running(), port, answered } };
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

  it('D3 the object server stopped mid-batch: jobs reading page images wait and resume without spending attempts; uploads fail with 503 blob_store_unavailable', async () => {
    const { workspaceId, apiKey } = await t.workspace();
    const store = createBlobStore(t.config);
    const pageIds: number[] = [];
    for (let i = 0; i < BATCH; i++) {
      const image = { bytes: png(20 + i, 20), mediaType: 'image/png', width: 20 + i, height: 20 };
      pageIds.push(await storedImagePage(t.pool, store, workspaceId, image));
    }
    await t.cluster.objectServer.kill('SIGKILL');
    const faultAt = new Date();
    const jobIds: string[] = [];
    for (const pageId of pageIds) {
      const job = await t.client.startJob({
        workspaceId,
        pageId,
        options: { simulated: SIMULATED },
      });
      jobIds.push(job.jobId);
    }
    const upload = uploadRequest([file(png(30, 20))]);
    const refused = await fetch(
      `${t.cluster.webs[0]!.url}/api/v1/workspaces/${workspaceId}/batches`,
      {
        method: 'POST',
        headers: {
          Authorization: `Bearer ${apiKey}`,
          'content-type': upload.headers.get('content-type') ?? '',
        },
        body: Buffer.from(await upload.arrayBuffer()),
      },
    );
    expect(refused.status).toBe(503);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe(
      'blob_store_unavailable',
    );
    await new Promise((resolve) => setTimeout(resolve, STORE_OUTAGE_MS));
    // Nothing could read its page image, so nothing finished, failed or was charged.
    const ended = await jobsEndedDuring(t, jobIds, faultAt);
    expect(ended.jobs, JSON.stringify(ended, null, 1)).toEqual([]);
    await t.cluster.objectServer.start();
    const recovered = await recoverySeconds(t.pool, jobIds, faultAt);
    await t.untilCompleted(workspaceId, jobIds);
    report('object-store-outage', { recoverySeconds: recovered, outageMs: STORE_OUTAGE_MS });
    await t.verify(workspaceId, jobIds);
    const charged = await t.pool.query(
      `SELECT count(*)::int AS n FROM transcription_job_attempts WHERE job_id = ANY($1) AND outcome <> 'completed'`,
      [jobIds],
    );
    expect(charged.rows[0].n).toBe(0);
    // The refused upload's reservation goes to the cleanup: the workspace holds its pages only.
    await runBlobCleanup({ pool: t.pool, blobStore: store, now: new Date(Date.now() + 2 * HOUR) });
    const held = await t.pool.query(
      'SELECT coalesce(sum(size_bytes), 0)::bigint AS n FROM blobs WHERE workspace_id = $1 AND deleted_at IS NULL',
      [workspaceId],
    );
    expect(await workspaceUsageBytes(t.pool, workspaceId)).toBe(Number(held.rows[0].n));
  });

  it('D3 a web replica SIGKILLed during a multipart upload: the client retries on the other, one batch, no orphan, quota right', async () => {
    const { workspaceId, apiKey } = await t.workspace();
    const [first, second] = t.cluster.webs as [WebProcess, WebProcess];
    const recording = wav(240_000);
    const upload = uploadRequest([file(recording, 'interview.wav')]);
    const body = Buffer.from(await upload.arrayBuffer());
    const headers = {
      Authorization: `Bearer ${apiKey}`,
      'content-type': upload.headers.get('content-type') ?? '',
      'Idempotency-Key': `drill-${workspaceId}`,
    };
    const path = `/api/v1/workspaces/${workspaceId}/batches`;
    let sent = 0;
    // The body trickles in; the replica dies once a third of it has gone.
    const slow = new ReadableStream<Uint8Array>({
      async pull(controller) {
        if (sent >= body.length) return controller.close();
        const piece = body.subarray(sent, sent + 64 * 1024);
        sent += piece.length;
        controller.enqueue(piece);
        if (sent > body.length / 3 && first.running()) void first.kill('SIGKILL');
        await new Promise((resolve) => setTimeout(resolve, 5));
      },
    });
    const cut = await fetch(`${first.url}${path}`, {
      method: 'POST',
      headers,
      body: slow,
      duplex: 'half',
    } as RequestInit).catch((error: unknown) => error);
    expect(cut).toBeInstanceOf(Error);
    const retried = await fetch(`${second.url}${path}`, { method: 'POST', headers, body });
    expect(retried.status).toBe(201);
    const batch = (await retried.json()) as { batchId: string; pages: Array<{ jobId: string }> };
    expect(batch.pages).toHaveLength(1);
    await first.start();
    // The same key on the restarted replica is the same batch (idempotent), not a second one.
    const again = await fetch(`${first.url}${path}`, { method: 'POST', headers, body });
    expect(((await again.json()) as { batchId: string }).batchId).toBe(batch.batchId);
    const jobIds = batch.pages.map((p) => p.jobId);
    await t.untilCompleted(workspaceId, jobIds);
    await t.verify(workspaceId, jobIds);
    // The cut upload left a reservation and perhaps a temporary object: the cleanup takes both.
    const store = createBlobStore(t.config);
    await runBlobCleanup({ pool: t.pool, blobStore: store, now: new Date(Date.now() + 2 * HOUR) });
    await sweepOrphans({ pool: t.pool, blobStore: store, now: new Date(Date.now() + 2 * HOUR) });
    // Quota right: what the workspace holds is its live blobs, nothing of the cut upload. (The
    // recording itself is released once the engine holds it, T2/U3, so it may be gone too.)
    const live = await t.pool.query(
      'SELECT coalesce(sum(size_bytes), 0)::bigint AS n FROM blobs WHERE workspace_id = $1 AND deleted_at IS NULL',
      [workspaceId],
    );
    expect(await workspaceUsageBytes(t.pool, workspaceId)).toBe(Number(live.rows[0].n));
    const pending = await t.pool.query(
      `SELECT count(*)::int AS n FROM blob_cleanups WHERE workspace_id = $1 AND status IN ('staged', 'due', 'failing')`,
      [workspaceId],
    );
    expect(pending.rows[0].n).toBe(0);
    const objects: string[] = [];
    for await (const object of store.list()) {
      if (object.key.startsWith(`ws/${workspaceId}/`)) objects.push(object.key);
    }
    const { rows } = await t.pool.query(
      'SELECT key FROM blobs WHERE workspace_id = $1 AND deleted_at IS NULL',
      [workspaceId],
    );
    // No orphan: every object in the bucket is a live blob of the workspace, and back.
    expect(objects.sort()).toEqual(rows.map((r) => r.key).sort());
  });

  it('D3 a web replica SIGKILLed during SSE: the client resumes on the other with Last-Event-ID, no gap, no duplicate', async () => {
    const { workspaceId, apiKey } = await t.workspace();
    const [first, second] = t.cluster.webs as [WebProcess, WebProcess];
    const path = `/api/v1/workspaces/${workspaceId}/events`;
    const received: number[] = [];
    let lastId: string | undefined = '0';
    const follow = (base: string) => {
      const source = new EventSource(`${base}${path}`, {
        fetch: (input, init) =>
          fetch(input, {
            ...init,
            headers: {
              ...(init?.headers ?? {}),
              Authorization: `Bearer ${apiKey}`,
              ...(lastId ? { 'Last-Event-ID': lastId } : {}),
            },
          }),
      });
      const onEvent = (event: MessageEvent) => {
        if (!event.lastEventId) return;
        if (!event.type.startsWith('dev.quire.stream.')) received.push(Number(event.lastEventId));
        lastId = event.lastEventId;
      };
      for (const type of [...QUIRE_EVENT_TYPES, ...STREAM_TYPES])
        source.addEventListener(type, onEvent);
      return source;
    };
    const one = follow(first.url);
    const jobIds = await t.startBatch(workspaceId, BATCH, SIMULATED);
    await eventually(async () => (received.length >= 3 ? true : undefined), 120_000, 50);
    await first.kill('SIGKILL');
    one.close();
    const two = follow(second.url);
    await t.untilCompleted(workspaceId, jobIds);
    // The SSE `id:` is the outbox position (D10): every committed event stamped, in order.
    await sequenceEvents(t.pool);
    const { rows } = await t.pool.query(
      'SELECT position FROM event_outbox WHERE workspace_id = $1 ORDER BY position',
      [workspaceId],
    );
    const all = rows.map((r) => Number(r.position));
    await eventually(
      async () => (received.includes(all[all.length - 1]!) ? true : undefined),
      60_000,
      100,
    );
    two.close();
    expect(received).toEqual(all);
    await first.start();
    await t.verify(workspaceId, jobIds);
  });
});
