import { readFile } from 'node:fs/promises';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { QuireClient } from '../../client';
import { EVENT_TYPES } from '../../core/cloudevents';
import { parseConfig } from '../../core/config';
import { DomainError } from '../../core/errors';
import { buildSnapshot } from '../../core/pricing';
import { auditInvariants } from '../../db/audit';
import { highWaterMark, readEventsAfter } from '../../db/events';
import { createJobStore } from '../../db/jobStore';
import { createJob, getJob } from '../../db/jobs';
import { withTransaction } from '../../db/pool';
import { getProviderStates, pauseQueue, resumeProvider } from '../../db/providerState';
import { createWorkspace } from '../../db/workspaces';
import { createProviderRegistry } from '../../providers/registry';
import { SimulatedProvider } from '../../providers/simulated';
import { TesseractProvider } from '../../providers/tesseract';
import { configureWeb } from '../../web/lib/server';
import type { QuireWorker } from '../../worker/createWorker';
import { call, type RouteModule, request, SseReader } from '../support/api';
import { makeTempDir, removeDir, renderPage } from '../support/fixtures';
import { ingestWithJobs } from '../support/ingest';
import { createTestQuire, type TestQuire, temporalAddress } from '../support/quire';
import { eventually } from '../support/wait';

/**
 * M2, M3 with two workspaces on one installation: what B sends (fault injection, latency, a
 * provider the installation does not run) never reaches A's outcome, and B resumes only what
 * is its own. Real engines, real Temporal, the route modules called in-process.
 */
const tesseract = new TesseractProvider();
let quire: TestQuire;
let worker: QuireWorker;
let running: Promise<void>;
let dir: string;
let A: { ws: number; key: string };
let B: { ws: number; key: string };
const R: Record<string, RouteModule> = {};

/** B's request from the issue: polish through the simulated engine, which reports no credit. */
const B_POLISH_CREDIT = {
  polishProvider: 'simulated',
  simulated: { faults: [{ op: 'polish', category: 'credit' }] },
};

beforeAll(async () => {
  quire = await createTestQuire(
    { QUIRE_DEFAULT_PROVIDER: 'auto', QUIRE_HEARTBEAT_TIMEOUT_MS: '30000' },
    createProviderRegistry([tesseract, new SimulatedProvider()]),
  );
  configureWeb({ ...quire.config, TEMPORAL_ADDRESS: temporalAddress() });
  R.jobs = await import('../../web/app/api/v1/workspaces/[ws]/transcription-jobs/route');
  R.resume = await import('../../web/app/api/v1/workspaces/[ws]/providers/[name]/resume/route');
  R.providers = await import('../../web/app/api/v1/workspaces/[ws]/providers/route');
  R.events = await import('../../web/app/api/v1/workspaces/[ws]/events/route');
  const a = await createWorkspace(quire.db.pool, 'Archive A');
  const b = await createWorkspace(quire.db.pool, 'Archive B');
  A = { ws: a.workspace.id, key: a.apiKey };
  B = { ws: b.workspace.id, key: b.apiKey };
  dir = await makeTempDir();
  worker = await quire.newWorker();
  running = worker.run();
});

afterEach(async () => {
  expect(await auditInvariants(quire.db.pool)).toEqual([]);
});

afterAll(async () => {
  const { closeEventHub } = await import('../../web/lib/eventStream');
  await closeEventHub();
  worker?.shutdown();
  await running;
  await tesseract.close();
  await quire?.close();
  if (dir) await removeDir(dir);
});

async function uploadPage(ws: number, options?: Record<string, unknown>) {
  const image = await renderPage(dir, `page-${ws}-${Date.now()}.png`, [
    'The parish council met in winter',
  ]);
  const form = new FormData();
  form.append('files[]', new Blob([await readFile(image)], { type: 'image/png' }), 'page.png');
  const { records } = await ingestWithJobs(quire, ws, form, { options });
  return records[0]!;
}

const count = async (sql: string, params: unknown[]) =>
  (await quire.db.pool.query(sql, params)).rowCount ?? 0;

describe('no reach across workspaces (M2, M3)', () => {
  it("M3 B's polish credit fault pauses the simulated engine for B alone: tesseract stays active and A's job commits", async () => {
    const jobB = await uploadPage(B.ws, B_POLISH_CREDIT);
    // Tesseract reads B's page; the polish call through the simulated engine reports no credit.
    const pausedB = await eventually(async () => {
      const job = await getJob(quire.db.pool, B.ws, jobB.id);
      return job?.stage === 'paused' ? job : undefined;
    }, 90_000);
    expect(pausedB.provider).toBe('tesseract');

    const states = await getProviderStates(quire.db.pool);
    expect(states.filter((s) => s.status === 'paused')).toEqual([
      expect.objectContaining({ provider: 'simulated', workspace_id: B.ws, reason: 'credit' }),
    ]);
    // The refused polish call is recorded under the provider that refused it.
    const calls = await quire.db.pool.query(
      `SELECT provider, outcome FROM provider_calls WHERE job_id = $1 AND operation = 'polish'`,
      [jobB.id],
    );
    expect(calls.rows).toEqual([{ provider: 'simulated', outcome: 'credit' }]);

    // A's image job, on tesseract, is not held by B's pause.
    const jobA = await uploadPage(A.ws);
    const outcome = await quire.temporal.workflow.getHandle(jobA.workflowId).result();
    expect(outcome.status).toBe('completed');
    // B's job is still waiting for its own Resume.
    expect((await getJob(quire.db.pool, B.ws, jobB.id))?.status).toBe('pending');
    await quire.client.cancelJob(B.ws, jobB.id);
  });

  it("M3 a workspace cannot resume a provider on the installation's credentials: 404, and it stays paused", async () => {
    await withTransaction(quire.db.pool, (client) =>
      pauseQueue(client, 'tesseract', 'credit', undefined, new Date()),
    );
    try {
      const refused = await call(
        R.resume!,
        'POST',
        '/x',
        { ws: String(B.ws), name: 'tesseract' },
        { key: B.key },
      );
      expect(refused.status).toBe(404);
      expect(refused.json.error.code).toBe('provider_not_found');
      const tesseractState = (await getProviderStates(quire.db.pool)).find(
        (s) => s.provider === 'tesseract',
      );
      expect(tesseractState).toMatchObject({ status: 'paused', workspace_id: null });
      // The workspace sees the pause that holds its jobs, as an operator's to lift.
      const listed = await call(R.providers!, 'GET', '/x', { ws: String(B.ws) }, { key: B.key });
      expect(
        listed.json.providers.find((p: { name: string }) => p.name === 'tesseract'),
      ).toMatchObject({
        status: 'paused',
        credentials: 'installation',
        needsOperator: true,
        resumable: false,
      });
    } finally {
      expect(await resumeProvider(quire.db.pool, 'tesseract')).toBe(true);
    }
  });

  it("M3 a workspace resumes its own pause of a workspace-credential provider, and not another workspace's", async () => {
    const now = new Date();
    await withTransaction(quire.db.pool, async (client) => {
      await pauseQueue(client, 'simulated', 'auth', undefined, now, A.ws);
      await pauseQueue(client, 'simulated', 'auth', undefined, now, B.ws);
    });
    const listedA = await call(R.providers!, 'GET', '/x', { ws: String(A.ws) }, { key: A.key });
    expect(
      listedA.json.providers.find((p: { name: string }) => p.name === 'simulated'),
    ).toMatchObject({ status: 'paused', credentials: 'workspace', resumable: true });
    const resumed = await call(
      R.resume!,
      'POST',
      '/x',
      { ws: String(B.ws), name: 'simulated' },
      { key: B.key },
    );
    expect(resumed.status).toBe(200);
    expect(resumed.json).toMatchObject({ provider: 'simulated', resumed: true });
    const simulated = (await getProviderStates(quire.db.pool)).filter(
      (s) => s.provider === 'simulated',
    );
    expect(simulated.find((s) => s.workspace_id === A.ws)?.status).toBe('paused');
    expect(simulated.find((s) => s.workspace_id === B.ws)?.status).toBe('active');
    // A workspace sees no other workspace's own pauses.
    const listedB = await call(R.providers!, 'GET', '/x', { ws: String(B.ws) }, { key: B.key });
    expect(
      listedB.json.providers.find((p: { name: string }) => p.name === 'simulated').status,
    ).toBe('active');
    expect(await resumeProvider(quire.db.pool, 'simulated', A.ws)).toBe(true);
  });

  it('M2 job options are checked at creation: latency of hours and unknown or unconfigured providers are 422 with stable codes, nothing written', async () => {
    const pageId = await quire.page(B.ws);
    const before = await count('SELECT 1 FROM transcription_jobs WHERE workspace_id = $1', [B.ws]);
    const post = (body: unknown) =>
      call(R.jobs!, 'POST', '/x', { ws: String(B.ws) }, { key: B.key, body });
    const cases: Array<[unknown, string]> = [
      [
        { pageId, provider: 'simulated', options: { simulated: { latencyMs: 3 * 3_600_000 } } },
        'invalid_simulated_options',
      ],
      [
        { pageId, options: { simulated: { lines: 4, audioLatencyMs: 7_200_000 } } },
        'invalid_simulated_options',
      ],
      [{ pageId, provider: 'no-such-engine' }, 'unknown_provider'],
      [{ pageId, provider: 'openai-chat' }, 'provider_not_enabled'],
      [{ pageId, options: { polishProvider: 'openai-chat' } }, 'provider_not_enabled'],
      [{ pageId, options: { polishProvider: 'no-such-engine' } }, 'unknown_provider'],
    ];
    for (const [body, code] of cases) {
      const refused = await post(body);
      expect([refused.status, refused.json?.error?.code]).toEqual([422, code]);
    }
    expect(await count('SELECT 1 FROM transcription_jobs WHERE workspace_id = $1', [B.ws])).toBe(
      before,
    );
  });

  it('M2 without QUIRE_ENABLE_SIMULATED the simulated engine cannot be asked for, nor its options carried', async () => {
    const production = parseConfig({
      DATABASE_URL: quire.config.DATABASE_URL,
      QUIRE_TASK_QUEUE: quire.config.QUIRE_TASK_QUEUE,
      QUIRE_SECRET_KEY: quire.config.QUIRE_SECRET_KEY,
    });
    expect(production.QUIRE_ENABLE_SIMULATED).toBe(false);
    // The client as `npm start` builds it: it offers what the configuration enables.
    const installed = QuireClient.fromConfig(
      production,
      quire.temporal,
      createJobStore(quire.db.pool),
    );
    const pageId = await quire.page(B.ws);
    const refusals: string[] = [];
    for (const request of [
      { provider: 'simulated' },
      { options: { simulated: { faults: [{ op: 'polish', category: 'credit' }] } } },
      { options: { polishProvider: 'simulated' } },
    ]) {
      try {
        await installed.startJob({ workspaceId: B.ws, pageId, ...request });
        refusals.push('accepted');
      } catch (error) {
        refusals.push(error instanceof DomainError ? `${error.kind}:${error.code}` : String(error));
      }
    }
    expect(refusals).toEqual([
      'invalid:provider_not_enabled',
      'invalid:simulated_not_enabled',
      'invalid:provider_not_enabled',
    ]);
    expect(await count('SELECT 1 FROM transcription_jobs WHERE page_id = $1', [pageId])).toBe(0);
  });
});

describe('pause and resume events reach the workspaces they affect (M3, E1)', () => {
  it('M3 E1 an installation pause and its resume go to the streams of workspaces with jobs waiting on it, and no other', async () => {
    // A has a job waiting on tesseract; B has none.
    const pageA = await quire.page(A.ws);
    await withTransaction(quire.db.pool, (tx) =>
      createJob(tx, {
        workspaceId: A.ws,
        pageId: pageA,
        snapshot: buildSnapshot({ provider: 'tesseract' }),
      }),
    );
    const startA = await highest(A.ws);
    const startB = await highest(B.ws);
    await withTransaction(quire.db.pool, (client) =>
      pauseQueue(client, 'tesseract', 'credit', undefined, new Date()),
    );
    await resumeProvider(quire.db.pool, 'tesseract');
    const typesOf = async (ws: number, after: number) =>
      (await readEventsAfter(quire.db.pool, ws, after, 100))
        .filter((e) => e.type.startsWith('dev.quire.provider.'))
        .map((e) => [e.type, e.data.provider]);
    expect(await typesOf(A.ws, startA)).toEqual([
      [EVENT_TYPES.providerPaused, 'tesseract'],
      [EVENT_TYPES.providerResumed, 'tesseract'],
    ]);
    expect(await typesOf(B.ws, startB)).toEqual([]);

    // Through A's event stream, as a client sees them.
    const controller = new AbortController();
    const response = (await (R.events!.GET as (r: Request, c: unknown) => Promise<Response>)(
      request('GET', `/workspaces/${A.ws}/events`, {
        key: A.key,
        headers: { 'last-event-id': String(startA) },
        signal: controller.signal,
      }),
      { params: Promise.resolve({ ws: String(A.ws) }) },
    )) as Response;
    expect(response.status).toBe(200);
    const reader = SseReader.of(response);
    try {
      const frames = await reader.until((f) => f.event === EVENT_TYPES.providerResumed, 20_000);
      const paused = frames.find((f) => f.event === EVENT_TYPES.providerPaused);
      expect(JSON.parse(paused!.data!)).toMatchObject({
        type: EVENT_TYPES.providerPaused,
        data: { provider: 'tesseract', reason: 'credit' },
      });
    } finally {
      controller.abort();
      await reader.close();
    }
    await quire.db.pool.query(
      `UPDATE transcription_jobs SET status = 'canceled', ended_at = now() WHERE page_id = $1`,
      [pageA],
    );
  });

  it("M3 E1 a pause of a workspace's own credentials is told to that workspace alone", async () => {
    const startA = await highest(A.ws);
    const startB = await highest(B.ws);
    await withTransaction(quire.db.pool, (client) =>
      pauseQueue(client, 'simulated', 'outage', 60_000, new Date(), B.ws),
    );
    await resumeProvider(quire.db.pool, 'simulated', B.ws);
    const types = async (ws: number, after: number) =>
      (await readEventsAfter(quire.db.pool, ws, after, 100)).map((e) => e.type);
    expect(await types(B.ws, startB)).toEqual([
      EVENT_TYPES.providerPaused,
      EVENT_TYPES.providerResumed,
    ]);
    expect(await types(A.ws, startA)).toEqual([]);
  });
});

async function highest(ws: number): Promise<number> {
  return highWaterMark(quire.db.pool, ws);
}
