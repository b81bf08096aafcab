import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createTranscriptionActivities } from '../../activities/transcription';
import { commitPage } from '../../activities/transcriptStages';
import { hashToken, newAttemptToken, sealToken } from '../../core/attemptToken';
import { StaleAttemptError } from '../../core/failures';
import { claimAttempt, closeAttempt, pauseProvider, recordProgress } from '../../db/attempts';
import { auditInvariants } from '../../db/audit';
import { saveCheckpoints } from '../../db/checkpoints';
import type { AttemptFence } from '../../db/fence';
import { createBatch } from '../../db/ingest';
import { cancelBatch, createJob, getJobById, listAttempts } from '../../db/jobs';
import { withTransaction } from '../../db/pool';
import { buildSnapshot, createProviderRegistry } from '../../providers/registry';
import { SimulatedProvider } from '../../providers/simulated';
import { fenced } from '../support/fenced';
import { createTestQuire, silentLogger, type TestQuire } from '../support/quire';

let quire: TestQuire;
let ws: number;

beforeAll(async () => {
  quire = await createTestQuire();
  ws = await quire.workspace();
});
afterEach(async () => {
  expect(await auditInvariants(quire.db.pool)).toEqual([]);
});
afterAll(async () => {
  await quire?.close();
});

const snapshot = buildSnapshot({ provider: 'simulated' });
const engine = { engine: 'simulated', model: 'sim-1', version: '1.0.0' };
const segments = [
  {
    index: 0,
    target: { kind: 'xywh' as const, box: { x: 0, y: 0, w: 10, h: 10 } },
    text: 'a line',
  },
];

async function claimed(
  batchId?: string,
): Promise<{ jobId: string; pageId: number; fence: AttemptFence; token: Buffer }> {
  const pageId = await quire.page(ws);
  const { job } = await withTransaction(quire.db.pool, (tx) =>
    createJob(tx, { workspaceId: ws, pageId, snapshot, batchId }),
  );
  const token = newAttemptToken();
  const claim = await claimAttempt(quire.db.pool, {
    jobId: job.id,
    owner: 'w1',
    tokenHash: hashToken(token),
    maxAttempts: 5,
  });
  if (claim.state !== 'claimed') throw new Error(`claim ${claim.state}`);
  const fence = { jobId: job.id, attemptNumber: claim.attemptNumber, tokenHash: hashToken(token) };
  await fenced(
    quire.db.pool,
    fence,
    (client) =>
      saveCheckpoints(client, fence, [
        { stage: 'segment', seq: 0, payload: { lines: [{ box: segments[0]!.target.box }] } },
      ]),
    'SHARE',
  );
  await fenced(
    quire.db.pool,
    fence,
    (client) =>
      saveCheckpoints(client, fence, [{ stage: 'recognize', seq: 0, payload: { text: 'a line' } }]),
    'SHARE',
  );
  return { jobId: job.id, pageId, fence, token };
}

/** The activities of a worker `w1` and the sealed ref of the attempt it claimed. */
function workerW1(claim: { jobId: string; fence: AttemptFence; token: Buffer }) {
  const activities = createTranscriptionActivities({
    pool: quire.db.pool,
    providers: createProviderRegistry([new SimulatedProvider()]),
    secretKey: quire.config.QUIRE_SECRET_KEY,
    owner: 'w1',
    resolveMedia: async (k) => k,
    logger: silentLogger,
    heartbeatEveryMs: 1_000,
  });
  const ref = {
    jobId: claim.jobId,
    attemptNumber: claim.fence.attemptNumber,
    sealedToken: sealToken(claim.token, quire.config.QUIRE_SECRET_KEY),
  };
  return { activities, ref };
}

describe('A1 fenced attempts', () => {
  it('A1 a stale token can no longer record progress, checkpoint, fail, pause or commit', async () => {
    const { jobId, fence } = await claimed();
    const next = newAttemptToken();
    const second = await claimAttempt(quire.db.pool, {
      jobId,
      owner: 'w2',
      tokenHash: hashToken(next),
      maxAttempts: 5,
    });
    expect(second.state).toBe('claimed');
    const pool = quire.db.pool;
    await expect(
      recordProgress(pool, fence, { stage: 'recognize', completed: 1 }),
    ).rejects.toBeInstanceOf(StaleAttemptError);
    await expect(
      fenced(
        pool,
        fence,
        (client) =>
          saveCheckpoints(client, fence, [
            { stage: 'recognize', seq: 1, payload: { text: 'late' } },
          ]),
        'SHARE',
      ),
    ).rejects.toBeInstanceOf(StaleAttemptError);
    await expect(
      fenced(pool, fence, (client) =>
        closeAttempt(client, fence, { outcome: 'failed', category: 'internal', detail: 'late' }, 5),
      ),
    ).rejects.toBeInstanceOf(StaleAttemptError);
    await expect(
      fenced(pool, fence, (client, attempt) =>
        pauseProvider(client, fence, attempt, {
          provider: 'simulated',
          reason: 'outage',
          detail: 'late',
        }),
      ),
    ).rejects.toBeInstanceOf(StaleAttemptError);
    await expect(
      commitPage(pool, fence, { segments, completed: 1, failed: 0, total: 1, engine }),
    ).rejects.toBeInstanceOf(StaleAttemptError);
    const late = await pool.query(
      `SELECT count(*)::int AS n FROM job_checkpoints WHERE job_id = $1 AND seq = 1`,
      [jobId],
    );
    expect(late.rows[0].n).toBe(0);
    const attempts = await listAttempts(pool, jobId);
    expect(attempts.map((a) => [a.outcome, a.errorCategory])).toEqual([
      ['lease_expired', 'crashed'],
      ['running', null],
    ]);
  });

  it('P6 A1 an engine step that committed runs again (its report lost): nothing more is written, the next claim finds the revision', async () => {
    const { jobId, pageId, fence, token } = await claimed();
    const { activities, ref } = workerW1({ jobId, fence, token });
    const env = new MockActivityEnvironment();
    const slice = { maxSegments: 500, skip: [], commit: true };
    const first = await env.run(activities.recognizeSegments, ref, slice);
    expect(first).toMatchObject({ remaining: 0, committed: { state: 'committed', revision: 1 } });
    const again = await env.run(activities.recognizeSegments, ref, slice).catch((e: unknown) => e);
    expect((again as ApplicationFailure).type).toBe('StaleAttempt');
    const next = await claimAttempt(quire.db.pool, {
      jobId,
      owner: 'w2',
      tokenHash: hashToken(newAttemptToken()),
      maxAttempts: 5,
    });
    expect(next).toEqual({ state: 'inactive', status: 'completed', revision: 1 });
    const revisions = await quire.db.pool.query(
      'SELECT revision, source FROM page_revisions WHERE page_id = $1 ORDER BY revision',
      [pageId],
    );
    expect(revisions.rows).toEqual([
      { revision: 0, source: 'initial' },
      { revision: 1, source: 'engine' },
    ]);
    expect((await listAttempts(quire.db.pool, jobId)).map((a) => a.outcome)).toEqual(['completed']);
  });

  it('A1 activities turn a stale token into a non-retryable StaleAttempt failure', async () => {
    const { jobId, fence, token } = await claimed();
    await claimAttempt(quire.db.pool, {
      jobId,
      owner: 'w2',
      tokenHash: hashToken(newAttemptToken()),
      maxAttempts: 5,
    });
    const { activities, ref } = workerW1({ jobId, fence, token });
    const env = new MockActivityEnvironment();
    const error = await env
      .run(activities.commitTranscript, ref, { usePolish: false })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ApplicationFailure);
    expect((error as ApplicationFailure).type).toBe('StaleAttempt');
    expect((error as ApplicationFailure).nonRetryable).toBe(true);
    const forged = {
      ...ref,
      sealedToken: sealToken(newAttemptToken(), 'another-secret-that-is-long-enough-0000'),
    };
    const forgedError = await env
      .run(activities.commitTranscript, forged, { usePolish: false })
      .catch((e: unknown) => e);
    // D1: a token no key of this worker opens is a fleet configuration fault, not a dead token.
    expect((forgedError as ApplicationFailure).type).toBe('SecretKeyMismatch');
    expect((forgedError as ApplicationFailure).nonRetryable).toBe(true);
  });

  it('A2 attempt rows never change after leaving running and are never deleted', async () => {
    const { jobId } = await claimed();
    await claimAttempt(quire.db.pool, {
      jobId,
      owner: 'w2',
      tokenHash: hashToken(newAttemptToken()),
      maxAttempts: 5,
    });
    await expect(
      quire.db.pool.query(
        `UPDATE transcription_job_attempts SET outcome = 'completed' WHERE job_id = $1 AND attempt_number = 1`,
        [jobId],
      ),
    ).rejects.toThrow(/A2/);
    await expect(
      quire.db.pool.query(`DELETE FROM transcription_job_attempts WHERE job_id = $1`, [jobId]),
    ).rejects.toThrow(/A2/);
  });
});

describe('races, 100 iterations each, audited after each', () => {
  it('A1 two workers claiming the same job: one running attempt, the other closed lease_expired', async () => {
    for (let i = 0; i < 100; i++) {
      const pageId = await quire.page(ws);
      const { job } = await withTransaction(quire.db.pool, (tx) =>
        createJob(tx, { workspaceId: ws, pageId, snapshot }),
      );
      const claims = await Promise.all(
        ['a', 'b'].map((owner) =>
          claimAttempt(quire.db.pool, {
            jobId: job.id,
            owner,
            tokenHash: hashToken(newAttemptToken()),
            maxAttempts: 5,
          }),
        ),
      );
      expect(claims.every((c) => c.state === 'claimed')).toBe(true);
      const attempts = await listAttempts(quire.db.pool, job.id);
      expect(attempts.map((a) => a.outcome).sort()).toEqual(['lease_expired', 'running']);
      expect(await auditInvariants(quire.db.pool)).toEqual([]);
    }
  });

  it('J4 supersede against commit: exactly one wins, never both', async () => {
    let committed = 0;
    let superseded = 0;
    for (let i = 0; i < 100; i++) {
      const { jobId, pageId, fence } = await claimed();
      const [commit, created] = await Promise.allSettled([
        commitPage(quire.db.pool, fence, {
          segments,
          completed: 1,
          failed: 0,
          total: 1,
          engine,
        }),
        withTransaction(quire.db.pool, (tx) =>
          createJob(tx, { workspaceId: ws, pageId, snapshot }),
        ),
      ]);
      if (created.status === 'rejected') throw created.reason;
      const old = await getJobById(quire.db.pool, jobId);
      if (commit.status === 'fulfilled') {
        expect(old?.status).toBe('completed');
        expect(created.status === 'fulfilled' && created.value.superseded).toBeNull();
        committed += 1;
      } else {
        expect(commit.reason).toBeInstanceOf(StaleAttemptError);
        expect(old?.status).toBe('superseded');
        superseded += 1;
      }
      expect(await auditInvariants(quire.db.pool)).toEqual([]);
    }
    expect(committed + superseded).toBe(100);
  });

  it('J5 batch cancel against commit: exactly one wins, never both', async () => {
    let committed = 0;
    let canceled = 0;
    for (let i = 0; i < 100; i++) {
      const batchId = await createBatch(quire.db.pool, ws);
      const { jobId, fence } = await claimed(batchId);
      const [commit, cancel] = await Promise.allSettled([
        commitPage(quire.db.pool, fence, {
          segments,
          completed: 1,
          failed: 0,
          total: 1,
          engine,
        }),
        cancelBatch(quire.db.pool, ws, batchId),
      ]);
      if (cancel.status === 'rejected') throw cancel.reason;
      const job = await getJobById(quire.db.pool, jobId);
      if (commit.status === 'fulfilled') {
        expect(job?.status).toBe('completed');
        committed += 1;
      } else {
        expect(commit.reason).toBeInstanceOf(StaleAttemptError);
        expect(job?.status).toBe('canceled');
        canceled += 1;
      }
      expect(await auditInvariants(quire.db.pool)).toEqual([]);
    }
    expect(committed + canceled).toBe(100);
  });
});
