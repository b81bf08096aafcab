import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { CLI_ACTOR } from '../../core/actor';
import { parseConfig } from '../../core/config';
import { auditInvariants } from '../../db/audit';
import { getJob } from '../../db/jobs';
import { providersEnabledFor } from '../../db/operatorControls';
import { createOperatorKey, revokeOperatorKey } from '../../db/operatorKeys';
import { withTransaction } from '../../db/pool';
import { pauseQueue } from '../../db/providerState';
import { createWorkspace } from '../../db/workspaces';
import { OPERATOR_OPERATIONS } from '../../web/lib/operatorOpenapi';
import { configureWeb } from '../../web/lib/server';
import type { QuireWorker } from '../../worker/createWorker';
import { call, type RouteModule } from '../support/api';
import { createTestQuire, eventually, type TestQuire, temporalAddress } from '../support/quire';

/**
 * M1 (two kinds of principal) and M4 (operator controls and the audit log) through the route
 * modules, in-process, against a real PostgreSQL, a real Temporal dev server and a worker.
 */
let quire: TestQuire;
let worker: QuireWorker;
let running: Promise<void>;
let stopWorker: () => void;
let A: { ws: number; key: string; keyId: number };
let B: { ws: number; key: string; keyId: number };
let operator: { id: number; key: string };

// Static imports, one per operator route: the bundler resolves no deeper dynamic paths.
const OPERATOR_ROUTES: Record<string, () => Promise<RouteModule>> = {
  '/operator/installation': () => import('../../web/app/api/v1/operator/installation/route'),
  '/operator/workspaces': () => import('../../web/app/api/v1/operator/workspaces/route'),
  '/operator/workspaces/{ws}': () => import('../../web/app/api/v1/operator/workspaces/[ws]/route'),
  '/operator/providers': () => import('../../web/app/api/v1/operator/providers/route'),
  '/operator/providers/{name}/resume': () =>
    import('../../web/app/api/v1/operator/providers/[name]/resume/route'),
  '/operator/operations': () => import('../../web/app/api/v1/operator/operations/route'),
  '/operator/audit': () => import('../../web/app/api/v1/operator/audit/route'),
  '/operator/accounts': () => import('../../web/app/api/v1/operator/accounts/route'),
  '/operator/accounts/{accountId}': () =>
    import('../../web/app/api/v1/operator/accounts/[accountId]/route'),
};
const operatorRoute = (path: string): Promise<RouteModule> => {
  const load = OPERATOR_ROUTES[path];
  if (!load) throw new Error(`no operator route module for ${path}`);
  return load();
};
const workspaceRoute = (path: string): Promise<RouteModule> =>
  import(`../../web/app/api/v1/workspaces/[ws]/${path}/route.ts`);

async function keyIdOf(workspaceId: number): Promise<number> {
  const { rows } = await quire.db.pool.query(
    'SELECT id FROM api_keys WHERE workspace_id = $1 ORDER BY id LIMIT 1',
    [workspaceId],
  );
  return rows[0].id;
}

async function auditRows() {
  const { rows } = await quire.db.pool.query(
    'SELECT actor_kind, actor_key_id, action, target, workspace_id, before, after FROM audit_log ORDER BY id',
  );
  return rows;
}

async function controlsOf(ws: number) {
  const { rows } = await quire.db.pool.query(
    'SELECT daily_budget_micros, quota_bytes, active_job_cap, enabled_providers FROM workspaces WHERE id = $1',
    [ws],
  );
  return rows[0];
}

beforeAll(async () => {
  quire = await createTestQuire();
  configureWeb(
    parseConfig({
      DATABASE_URL: quire.db.url,
      TEMPORAL_ADDRESS: temporalAddress(),
      QUIRE_TASK_QUEUE: quire.config.QUIRE_TASK_QUEUE,
      QUIRE_SECRET_KEY: quire.config.QUIRE_SECRET_KEY,
      QUIRE_DEFAULT_PROVIDER: 'simulated',
      QUIRE_ENABLE_SIMULATED: '1',
      QUIRE_RETRY_INITIAL_MS: '50',
      QUIRE_RETRY_MAX_MS: '200',
    }),
  );
  vi.spyOn(console, 'error').mockImplementation(() => {});
  const a = await createWorkspace(quire.db.pool, 'Archive A');
  const b = await createWorkspace(quire.db.pool, 'Archive B');
  A = { ws: a.workspace.id, key: a.apiKey, keyId: await keyIdOf(a.workspace.id) };
  B = { ws: b.workspace.id, key: b.apiKey, keyId: await keyIdOf(b.workspace.id) };
  const created = await createOperatorKey(quire.db.pool, CLI_ACTOR, 'on call');
  operator = { id: created.id, key: created.key };
  worker = await quire.newWorker();
  const stop = new Promise<void>((resolve) => {
    stopWorker = resolve;
  });
  running = worker.runUntil(stop);
});

afterEach(async () => {
  expect(await auditInvariants(quire.db.pool)).toEqual([]);
});

afterAll(async () => {
  stopWorker?.();
  await running;
  const { pool } = await import('../../web/lib/server');
  await pool().end();
  vi.restoreAllMocks();
  await quire?.close();
});

describe('M1 two kinds of principal', () => {
  it('M1 a workspace key gets 404 on each operator route; no key 401; an operator key is served', async () => {
    const operatorOps = OPERATOR_OPERATIONS.filter((o) => o.path.startsWith('/operator/'));
    expect(operatorOps.length).toBeGreaterThanOrEqual(9);
    const before = { audit: await auditRows(), controls: await controlsOf(A.ws) };
    for (const op of operatorOps) {
      const module = await operatorRoute(op.path);
      const params = { ws: String(A.ws), name: 'simulated', accountId: String(operator.id) };
      const method = op.method.toUpperCase();
      const body = method === 'PATCH' ? { dailyBudgetMicros: 1 } : undefined;
      const path = op.path
        .replace('{ws}', String(A.ws))
        .replace('{name}', 'simulated')
        .replace('{accountId}', String(operator.id));
      const asWorkspace = await call(module, method, path, params, { key: A.key, body });
      expect(asWorkspace.status, `${method} ${op.path}`).toBe(404);
      expect(asWorkspace.json.error.code).toBe('not_found');
      const anonymous = await call(module, method, path, params, { body });
      expect(anonymous.status, `${method} ${op.path}`).toBe(401);
      if (method === 'GET') {
        const asOperator = await call(module, method, path, params, { key: operator.key });
        expect(asOperator.status, `${method} ${op.path}`).toBe(200);
      }
    }
    // Refused means untouched: no control changed, no audit row written.
    expect(await auditRows()).toEqual(before.audit);
    expect(await controlsOf(A.ws)).toEqual(before.controls);
  });

  it('M1 a revoked operator key is refused at once', async () => {
    const spare = await createOperatorKey(quire.db.pool, CLI_ACTOR, 'spare');
    const module = await operatorRoute('/operator/installation');
    expect(
      (await call(module, 'GET', '/operator/installation', {}, { key: spare.key })).status,
    ).toBe(200);
    await revokeOperatorKey(quire.db.pool, CLI_ACTOR, spare.id);
    const refused = await call(module, 'GET', '/operator/installation', {}, { key: spare.key });
    expect(refused.status).toBe(401);
  });

  it('M1 a workspace key sees only its own share in /operations and /providers; operators see every workspace', async () => {
    // B stores bytes and spends; A must see neither, not even in a total.
    await quire.db.pool.query(
      `INSERT INTO blobs (key, workspace_id, sha256, size_bytes, media_type)
       VALUES ('m1-a', $1, decode(repeat('aa', 32), 'hex'), 1000, 'image/png'),
              ('m1-b', $2, decode(repeat('bb', 32), 'hex'), 7777, 'image/png')`,
      [A.ws, B.ws],
    );
    await quire.db.pool.query(
      `INSERT INTO provider_calls (workspace_id, provider, operation, units, unit, cost_micros, outcome)
       VALUES ($1, 'simulated', 'recognize', 1, 'line', 4242, 'ok')`,
      [B.ws],
    );
    const operations = await workspaceRoute('operations');
    const own = await call(
      operations,
      'GET',
      `/workspaces/${A.ws}/operations`,
      { ws: String(A.ws) },
      { key: A.key },
    );
    expect(own.status).toBe(200);
    expect(own.json.storage.workspaceBytes).toBe(1000);
    expect(own.text).not.toContain('7777');
    expect(own.text).not.toContain('8777');
    expect(own.json.storage).not.toHaveProperty('totalBytes');

    const providers = await workspaceRoute('providers');
    const spend = await call(
      providers,
      'GET',
      `/workspaces/${A.ws}/providers`,
      { ws: String(A.ws) },
      { key: A.key },
    );
    expect(spend.json.budget).toEqual({ workspace: { spentMicros: 0, budgetMicros: null } });
    expect(spend.text).not.toContain('4242');

    const all = await call(
      await operatorRoute('/operator/operations'),
      'GET',
      '/operator/operations',
      {},
      { key: operator.key },
    );
    expect(all.json.storage.totalBytes).toBe(8777);
    expect(all.json.workspaces).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ workspaceId: B.ws, storedBytes: 7777, spentTodayMicros: 4242 }),
        expect.objectContaining({ workspaceId: A.ws, storedBytes: 1000, spentTodayMicros: 0 }),
      ]),
    );
    const opProviders = await call(
      await operatorRoute('/operator/providers'),
      'GET',
      '/operator/providers',
      {},
      { key: operator.key },
    );
    expect(opProviders.json.budget.spentMicros).toBe(4242);
  });

  it('M1 /readyz gives the installation detail to an operator key only', async () => {
    const readyz = await import('../../web/app/readyz/route');
    const plain = await (await readyz.GET(new Request('http://quire.test/readyz'))).json();
    expect(plain.status).toBe('ready');
    expect(plain).not.toHaveProperty('detail');
    const asWorkspace = await (
      await readyz.GET(
        new Request('http://quire.test/readyz', { headers: { authorization: `Bearer ${A.key}` } }),
      )
    ).json();
    expect(asWorkspace).not.toHaveProperty('detail');
    const asOperator = await (
      await readyz.GET(
        new Request('http://quire.test/readyz', {
          headers: { authorization: `Bearer ${operator.key}` },
        }),
      )
    ).json();
    expect(asOperator.detail.queue).toHaveProperty('pendingJobs');
    expect(asOperator.detail.pausedProviders).toEqual([]);
  });
});

describe('M4 operator controls and the audit log', () => {
  it('M4 an operator sets budget, quota, cap and enabled providers; each lands in the audit log with before and after', async () => {
    const module = await operatorRoute('/operator/workspaces/{ws}');
    const start = (await auditRows()).length;
    const first = await call(
      module,
      'PATCH',
      `/operator/workspaces/${B.ws}`,
      { ws: String(B.ws) },
      {
        key: operator.key,
        body: {
          dailyBudgetMicros: 5_000_000,
          quotaBytes: 1_048_576,
          activeJobCap: 3,
          enabledProviders: ['tesseract', 'simulated', 'tesseract'],
        },
      },
    );
    expect(first.status).toBe(200);
    expect(first.json.controls).toEqual({
      dailyBudgetMicros: 5_000_000,
      quotaBytes: 1_048_576,
      activeJobCap: 3,
      enabledProviders: ['tesseract', 'simulated'],
    });
    expect(await controlsOf(B.ws)).toEqual({
      daily_budget_micros: 5_000_000,
      quota_bytes: 1_048_576,
      active_job_cap: 3,
      enabled_providers: ['tesseract', 'simulated'],
    });
    expect(await providersEnabledFor(quire.db.pool, B.ws)).toEqual(['tesseract', 'simulated']);
    const second = await call(
      module,
      'PATCH',
      `/operator/workspaces/${B.ws}`,
      { ws: String(B.ws) },
      {
        key: operator.key,
        body: { activeJobCap: null, enabledProviders: null },
      },
    );
    expect(second.json.controls.activeJobCap).toBeNull();

    const actor = {
      actor_kind: 'operator',
      actor_key_id: operator.id,
      target: `workspaces/${B.ws}`,
      workspace_id: B.ws,
    };
    expect((await auditRows()).slice(start)).toEqual([
      {
        ...actor,
        action: 'workspace.daily_budget',
        before: { dailyBudgetMicros: null },
        after: { dailyBudgetMicros: 5_000_000 },
      },
      {
        ...actor,
        action: 'workspace.quota',
        before: { quotaBytes: null },
        after: { quotaBytes: 1_048_576 },
      },
      {
        ...actor,
        action: 'workspace.job_cap',
        before: { activeJobCap: null },
        after: { activeJobCap: 3 },
      },
      {
        ...actor,
        action: 'workspace.providers',
        before: { enabledProviders: null },
        after: { enabledProviders: ['tesseract', 'simulated'] },
      },
      {
        ...actor,
        action: 'workspace.job_cap',
        before: { activeJobCap: 3 },
        after: { activeJobCap: null },
      },
      {
        ...actor,
        action: 'workspace.providers',
        before: { enabledProviders: ['tesseract', 'simulated'] },
        after: { enabledProviders: null },
      },
    ]);

    const installation = await operatorRoute('/operator/installation');
    const global = await call(
      installation,
      'PATCH',
      '/operator/installation',
      {},
      {
        key: operator.key,
        body: { dailyBudgetMicros: 9_000_000, quotaBytes: 10_000_000 },
      },
    );
    expect(global.json.controls).toEqual({ dailyBudgetMicros: 9_000_000, quotaBytes: 10_000_000 });
    const read = await call(
      installation,
      'GET',
      '/operator/installation',
      {},
      { key: operator.key },
    );
    expect(read.json.controls).toEqual({ dailyBudgetMicros: 9_000_000, quotaBytes: 10_000_000 });
    expect(read.json.effectiveQuotaBytes).toBe(10_000_000);

    // Operators list every row; a workspace lists its own and nothing of the installation's.
    const listed = await call(
      await operatorRoute('/operator/audit'),
      'GET',
      '/operator/audit',
      {},
      { key: operator.key },
    );
    expect(listed.json.entries[0]).toMatchObject({
      action: 'installation.quota',
      target: 'installation',
      workspaceId: null,
      actor: { kind: 'operator', keyId: operator.id },
      before: { quotaBytes: null },
      after: { quotaBytes: 10_000_000 },
    });
    const audit = await workspaceRoute('audit');
    const ofB = await call(
      audit,
      'GET',
      `/workspaces/${B.ws}/audit`,
      { ws: String(B.ws) },
      { key: B.key },
    );
    expect(ofB.json.entries).toHaveLength(6);
    expect(ofB.json.entries.every((e: { workspaceId: number }) => e.workspaceId === B.ws)).toBe(
      true,
    );
    const ofA = await call(
      audit,
      'GET',
      `/workspaces/${A.ws}/audit`,
      { ws: String(A.ws) },
      { key: A.key },
    );
    expect(ofA.text).not.toContain(`workspaces/${B.ws}`);
    expect(ofA.text).not.toContain('installation');
    const foreign = await call(
      audit,
      'GET',
      `/workspaces/${B.ws}/audit`,
      { ws: String(B.ws) },
      { key: A.key },
    );
    expect(foreign.status).toBe(404);
  });

  it('M4 M2 a workspace whose operators enabled only tesseract cannot start a simulated job, by name or through its default; nothing is written', async () => {
    const route = await operatorRoute('/operator/workspaces/{ws}');
    const set = await call(
      route,
      'PATCH',
      `/operator/workspaces/${B.ws}`,
      { ws: String(B.ws) },
      { key: operator.key, body: { enabledProviders: ['tesseract'] } },
    );
    expect(set.status).toBe(200);
    const pageId = await quire.page(B.ws);
    const jobsBefore = await quire.db.pool.query(
      'SELECT count(*)::int AS n FROM transcription_jobs',
    );
    await expect(
      quire.client.startJob({ workspaceId: B.ws, pageId, provider: 'simulated' }),
    ).rejects.toMatchObject({ code: 'provider_not_enabled' });
    const create = await workspaceRoute('transcription-jobs');
    const refused = await call(
      create,
      'POST',
      `/workspaces/${B.ws}/transcription-jobs`,
      { ws: String(B.ws) },
      { key: B.key, body: { pageId } },
    );
    expect(refused.status).toBe(422);
    expect(refused.json).toMatchObject({ error: { code: 'provider_not_enabled' } });
    expect(
      (await quire.db.pool.query('SELECT count(*)::int AS n FROM transcription_jobs')).rows[0].n,
    ).toBe(jobsBefore.rows[0].n);
    // Workspace A has no list of its own: the installation's providers, simulated included.
    const pageA = await quire.page(A.ws);
    const started = await quire.client.startJob({ workspaceId: A.ws, pageId: pageA });
    await eventually(
      async () =>
        (await getJob(quire.db.pool, A.ws, started.jobId))?.status === 'completed' || undefined,
    );
    await call(
      route,
      'PATCH',
      `/operator/workspaces/${B.ws}`,
      { ws: String(B.ws) },
      { key: operator.key, body: { enabledProviders: null } },
    );
  });

  it('M4 an unknown provider, a bound or an empty change is refused with a stable code and changes nothing', async () => {
    const module = await operatorRoute('/operator/workspaces/{ws}');
    const before = { audit: await auditRows(), controls: await controlsOf(A.ws) };
    const patch = (body: unknown, ws = A.ws) =>
      call(
        module,
        'PATCH',
        `/operator/workspaces/${ws}`,
        { ws: String(ws) },
        { key: operator.key, body },
      );
    const unknown = await patch({
      dailyBudgetMicros: 7,
      enabledProviders: ['tesseract', 'nonesuch'],
    });
    expect(unknown.status).toBe(422);
    expect(unknown.json.error.code).toBe('unknown_provider');
    expect((await patch({ activeJobCap: 0 })).status).toBe(400);
    expect((await patch({ quotaBytes: -1 })).status).toBe(400);
    expect((await patch({})).status).toBe(400);
    expect((await patch({ surprise: 1 })).status).toBe(400);
    const missing = await patch({ activeJobCap: 2 }, 999_999);
    expect(missing.status).toBe(404);
    expect(missing.json.error.code).toBe('workspace_not_found');
    expect(await auditRows()).toEqual(before.audit);
    expect(await controlsOf(A.ws)).toEqual(before.controls);
  });

  it('M4 the audit log is append-only: UPDATE, DELETE and TRUNCATE are refused', async () => {
    expect((await auditRows()).length).toBeGreaterThan(0);
    await expect(quire.db.pool.query(`UPDATE audit_log SET action = 'job.cancel'`)).rejects.toThrow(
      /append-only/,
    );
    await expect(quire.db.pool.query('DELETE FROM audit_log')).rejects.toThrow(/append-only/);
    await expect(quire.db.pool.query('TRUNCATE audit_log')).rejects.toThrow(/append-only/);
  });

  it('M4 an operator resume, and a cancel, a re-run and a resume by a workspace key, are each audited with the actor key id', async () => {
    await withTransaction(quire.db.pool, (client) =>
      pauseQueue(client, 'simulated', 'credit', undefined, new Date()),
    );
    const resume = await operatorRoute('/operator/providers/{name}/resume');
    const resumed = await call(
      resume,
      'POST',
      '/operator/providers/simulated/resume',
      { name: 'simulated' },
      { key: operator.key },
    );
    expect(resumed.json).toMatchObject({ provider: 'simulated', resumed: true });
    const [opRow] = (await auditRows()).slice(-1);
    expect(opRow).toEqual({
      actor_kind: 'operator',
      actor_key_id: operator.id,
      action: 'provider.resume',
      target: 'providers/simulated',
      workspace_id: null,
      before: { status: 'paused', reason: 'credit' },
      after: { status: 'active', reason: null, woken: 0 },
    });

    // A workspace's own acts: a slow job canceled, then re-run, then a resume through its route.
    const pageId = await quire.page(A.ws);
    const started = await quire.client.startJob({
      workspaceId: A.ws,
      pageId,
      options: { simulated: { latencyMs: 500, lines: 20 } },
    });
    const cancel = await import(
      '../../web/app/api/v1/workspaces/[ws]/transcription-jobs/[jobId]/cancel/route'
    );
    const canceled = await call(
      cancel,
      'POST',
      `/workspaces/${A.ws}/transcription-jobs/${started.jobId}/cancel`,
      { ws: String(A.ws), jobId: started.jobId },
      { key: A.key },
    );
    expect(canceled.status).toBe(200);
    const { rerunJob } = await import('../../web/services/jobs');
    const { authenticateApiKey } = await import('../../db/workspaces');
    const principal = (await authenticateApiKey(quire.db.pool, A.key))!;
    const rerun = await rerunJob(principal, started.jobId);
    await eventually(
      async () =>
        (await getJob(quire.db.pool, A.ws, rerun.jobId))?.status === 'completed' || undefined,
    );
    const wsResume = await import(
      '../../web/app/api/v1/workspaces/[ws]/providers/[name]/resume/route'
    );
    await call(
      wsResume,
      'POST',
      `/workspaces/${A.ws}/providers/simulated/resume`,
      { ws: String(A.ws), name: 'simulated' },
      { key: A.key },
    );

    const rows = (await auditRows()).slice(-3);
    const actor = { actor_kind: 'workspace', actor_key_id: A.keyId, workspace_id: A.ws };
    expect(rows).toEqual([
      {
        ...actor,
        action: 'job.cancel',
        target: `transcription-jobs/${started.jobId}`,
        before: { status: expect.stringMatching(/pending|running/) },
        after: { status: 'canceled' },
      },
      {
        ...actor,
        action: 'job.rerun',
        target: `transcription-jobs/${started.jobId}`,
        before: { jobId: started.jobId, status: 'canceled' },
        after: { jobId: rerun.jobId, status: 'pending' },
      },
      {
        ...actor,
        action: 'provider.resume',
        target: 'providers/simulated',
        before: { status: 'active', reason: null },
        after: { status: 'active', reason: null, woken: 0 },
      },
    ]);
  });
});
