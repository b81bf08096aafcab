import { spawnSync } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashApiKey } from '../../core/apiKeys';
import { authenticateApiKey } from '../../db/workspaces';
import { configureWeb } from '../../web/lib/server';
import { createTestQuire, type TestQuire, temporalAddress } from '../support/quire';
import { waitUntil } from '../support/wait';
import { spawnWorker, waitHealthy } from '../support/workerProcess';

/**
 * The foundation as operators meet it: readiness, liveness, the admin CLI and the
 * worker's health command, against the real Postgres and Temporal of the test run.
 */
let quire: TestQuire;

beforeAll(async () => {
  quire = await createTestQuire();
  // The web modules called in process get their configuration handed in.
  configureWeb({ ...quire.config, TEMPORAL_ADDRESS: temporalAddress() });
});
afterAll(async () => {
  await quire?.close();
});

function tsx(script: string, args: string[], env: Record<string, string> = {}) {
  return spawnSync(process.execPath, ['--import', 'tsx', script, ...args], {
    env: {
      ...process.env,
      DATABASE_URL: quire.config.DATABASE_URL,
      QUIRE_SECRET_KEY: quire.config.QUIRE_SECRET_KEY,
      ...env,
    },
    encoding: 'utf8',
  });
}

describe('the stack for operators (§7, §11)', () => {
  it('/healthz answers and /readyz is 200 when Postgres and Temporal both answer', async () => {
    const health = await import('../../web/app/healthz/route');
    expect((await health.GET()).status).toBe(200);
    const ready = await import('../../web/app/readyz/route');
    const response = await ready.GET();
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({
      status: 'ready',
      checks: { postgres: 'ok', temporal: 'ok', secretKey: 'ok' },
    });
  });

  it('§7 admin create-workspace prints one JSON line; only the key hash is stored', async () => {
    const run = tsx('scripts/admin.ts', ['create-workspace', '--name', 'Parish registers']);
    expect(run.status).toBe(0);
    const lines = run.stdout.trim().split('\n');
    expect(lines).toHaveLength(1);
    const { workspaceId, apiKey } = JSON.parse(lines[0]!);
    expect(Number.isInteger(workspaceId)).toBe(true);
    expect(apiKey).toMatch(/^qk_\d+_/);
    expect(await authenticateApiKey(quire.db.pool, apiKey)).toMatchObject({ workspaceId });
    const stored = await quire.db.pool.query(
      'SELECT key_hash FROM api_keys WHERE workspace_id = $1',
      [workspaceId],
    );
    expect(stored.rows).toHaveLength(1);
    expect(Buffer.compare(stored.rows[0].key_hash, hashApiKey(apiKey))).toBe(0);
    const dump = await quire.db.pool.query(`SELECT row_to_json(k)::text AS t FROM api_keys k`);
    expect(dump.rows.map((r) => r.t).join(' ')).not.toContain(apiKey);
  });

  it('§7 admin create-workspace without a name fails with usage and creates nothing', async () => {
    const before = await quire.db.pool.query('SELECT count(*)::int AS n FROM workspaces');
    const run = tsx('scripts/admin.ts', ['create-workspace']);
    expect(run.status).toBe(2);
    expect(run.stderr).toMatch(/--name is required/);
    const after = await quire.db.pool.query('SELECT count(*)::int AS n FROM workspaces');
    expect(after.rows[0].n).toBe(before.rows[0].n);
  });

  it('O1 the worker health command: unhealthy without a heartbeat, healthy while polling, stale after', async () => {
    const missing = join(tmpdir(), `quire-no-health-${process.pid}.json`);
    rmSync(missing, { force: true });
    const none = tsx('worker/main.ts', ['health'], { QUIRE_HEALTH_FILE: missing });
    expect(none.status).toBe(1);
    expect(JSON.parse(none.stdout)).toMatchObject({ healthy: false });

    const worker = spawnWorker(quire, 'health');
    await waitHealthy(worker);
    const fresh = tsx('worker/main.ts', ['health'], { QUIRE_HEALTH_FILE: worker.healthFile });
    expect(fresh.status).toBe(0);
    expect(JSON.parse(fresh.stdout).reason).toMatch(/quire-worker@/);
    worker.child.kill('SIGKILL');
    await worker.exited;
    // Dead, it writes no more: wait until its last heartbeat is older than the limit the
    // command is given, then check it is still that same heartbeat.
    const last = readFileSync(worker.healthFile, 'utf8');
    const lastAt = Date.parse((JSON.parse(last) as { at: string }).at);
    await waitUntil(() => Date.now() - lastAt > 2_000, 10_000);
    expect(readFileSync(worker.healthFile, 'utf8')).toBe(last);
    const stale = tsx('worker/main.ts', ['health'], {
      QUIRE_HEALTH_FILE: worker.healthFile,
      QUIRE_HEALTH_MAX_AGE_MS: '2000',
    });
    expect(stale.status).toBe(1);
    expect(JSON.parse(stale.stdout).reason).toMatch(/last heartbeat/);
  });
});
