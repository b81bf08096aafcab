import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyPassword } from '../../core/passwords';
import { findAccountByEmail, memberRole } from '../../db/accounts';
import { authenticateOperatorKey } from '../../db/operatorKeys';
import { withTransaction } from '../../db/pool';
import { pauseQueue } from '../../db/providerState';
import { createSession, touchSession } from '../../db/sessions';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { temporalAddress } from '../support/quire';

/**
 * M1/M4: `quire admin` as an operator runs it, a real process against a real database: one
 * JSON line per command, every change in the audit log with the CLI as its actor.
 */
const ROOT = join(__dirname, '../..');
let db: TestDatabase;

function admin(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'scripts/admin.ts', ...args], {
      cwd: ROOT,
      env: {
        ...process.env,
        DATABASE_URL: db.url,
        TEMPORAL_ADDRESS: temporalAddress(),
        LOG_LEVEL: 'silent',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c) => {
      stdout += c;
    });
    child.stderr.on('data', (c) => {
      stderr += c;
    });
    child.on('error', reject);
    child.on('exit', (code) => resolve({ code: code ?? -1, stdout, stderr }));
  });
}

const jsonOf = (out: { stdout: string }) => JSON.parse(out.stdout.trim());

async function auditRows() {
  const { rows } = await db.pool.query(
    'SELECT actor_kind, actor_key_id, action, target, workspace_id, before, after FROM audit_log ORDER BY id',
  );
  return rows;
}

beforeAll(async () => {
  db = await createTestDatabase();
});

afterAll(async () => {
  await db?.drop();
});

describe('M4 quire admin commands', () => {
  it('M1 create-operator-key prints the key once, stores only its hash, and the key authenticates', async () => {
    const out = await admin('create-operator-key', '--label', 'night shift');
    expect(out.code).toBe(0);
    const { operatorKeyId, operatorKey } = jsonOf(out);
    expect(operatorKey).toMatch(/^qo_[A-Za-z0-9_-]{32}$/);
    expect(await authenticateOperatorKey(db.pool, operatorKey)).toEqual({ operatorKeyId });
    const stored = await db.pool.query('SELECT * FROM operator_keys WHERE id = $1', [
      operatorKeyId,
    ]);
    expect(JSON.stringify(stored.rows)).not.toContain(operatorKey);
    const listed = jsonOf(await admin('list-operator-keys'));
    expect(JSON.stringify(listed)).not.toContain(operatorKey);
    expect(listed.operatorKeys[0]).toMatchObject({ id: operatorKeyId, label: 'night shift' });
    expect((await admin('revoke-operator-key', '--id', String(operatorKeyId))).code).toBe(0);
    expect(await authenticateOperatorKey(db.pool, operatorKey)).toBeUndefined();
    expect((await auditRows()).map((r) => [r.actor_kind, r.action])).toEqual([
      ['cli', 'operator_key.create'],
      ['cli', 'operator_key.revoke'],
    ]);
  });

  it('R1 R3 create-account makes a member who can sign in with the printed password; disable-account ends their sessions at once', async () => {
    const ws = (await db.pool.query("INSERT INTO workspaces (name) VALUES ('people') RETURNING id"))
      .rows[0].id as number;
    const out = await admin(
      'create-account',
      '--email',
      'Archivist@Example.org',
      '--name',
      'An Archivist',
      '--workspace',
      String(ws),
      '--role',
      'editor',
    );
    expect(out.code).toBe(0);
    const { accountId, password } = jsonOf(out);
    const account = await findAccountByEmail(db.pool, 'archivist@example.org');
    expect(account?.id).toBe(accountId);
    expect(await verifyPassword(account!.passwordHash, password)).toBe(true);
    expect(account!.passwordHash).toMatch(/^\$argon2id\$/);
    expect(await memberRole(db.pool, ws, accountId)).toBe('editor');
    const session = await createSession(db.pool, { accountId, workspaceId: ws }, 600);
    expect(await touchSession(db.pool, session, 600)).toMatchObject({ role: 'editor' });
    expect((await admin('disable-account', '--email', 'archivist@example.org')).code).toBe(0);
    expect(await touchSession(db.pool, session, 600)).toBeUndefined();
    expect(
      (await admin('create-account', '--email', 'x@example.org', '--name', 'X', '--role', 'boss'))
        .code,
    ).not.toBe(0);
  });

  it('M4 set-budget, set-quota, set-job-cap and set-providers change a workspace and each is audited', async () => {
    const ws = jsonOf(await admin('create-workspace', '--name', 'Clinic')).workspaceId as number;
    const start = (await auditRows()).length;
    const w = String(ws);
    expect((await admin('set-budget', '--workspace', w, '--micros', '2500000')).code).toBe(0);
    expect((await admin('set-quota', '--workspace', w, '--bytes', '1000000')).code).toBe(0);
    expect((await admin('set-job-cap', '--workspace', w, '--cap', '4')).code).toBe(0);
    const last = await admin('set-providers', '--workspace', w, '--enabled', 'tesseract,whisper');
    expect(jsonOf(last)).toEqual({
      workspaceId: ws,
      controls: {
        dailyBudgetMicros: 2_500_000,
        quotaBytes: 1_000_000,
        activeJobCap: 4,
        enabledProviders: ['tesseract', 'whisper'],
      },
    });
    expect((await admin('set-budget', '--global', '--micros', '9000000')).code).toBe(0);
    expect((await admin('set-quota', '--global', '--bytes', 'none')).code).toBe(0);
    const cli = { actor_kind: 'cli', actor_key_id: null };
    const on = { ...cli, target: `workspaces/${ws}`, workspace_id: ws };
    expect((await auditRows()).slice(start)).toEqual([
      {
        ...on,
        action: 'workspace.daily_budget',
        before: { dailyBudgetMicros: null },
        after: { dailyBudgetMicros: 2_500_000 },
      },
      {
        ...on,
        action: 'workspace.quota',
        before: { quotaBytes: null },
        after: { quotaBytes: 1_000_000 },
      },
      {
        ...on,
        action: 'workspace.job_cap',
        before: { activeJobCap: null },
        after: { activeJobCap: 4 },
      },
      {
        ...on,
        action: 'workspace.providers',
        before: { enabledProviders: null },
        after: { enabledProviders: ['tesseract', 'whisper'] },
      },
      {
        ...cli,
        target: 'installation',
        workspace_id: null,
        action: 'installation.daily_budget',
        before: { dailyBudgetMicros: null },
        after: { dailyBudgetMicros: 9_000_000 },
      },
      {
        ...cli,
        target: 'installation',
        workspace_id: null,
        action: 'installation.quota',
        before: { quotaBytes: null },
        after: { quotaBytes: null },
      },
    ]);
    const log = jsonOf(await admin('audit-log', '--workspace', w));
    expect(log.entries.map((e: { action: string }) => e.action)).toEqual([
      'workspace.providers',
      'workspace.job_cap',
      'workspace.quota',
      'workspace.daily_budget',
    ]);
  });

  it('M4 bad input is refused with a stable code or a usage error and changes nothing', async () => {
    const ws = String(jsonOf(await admin('create-workspace', '--name', 'Archive')).workspaceId);
    const before = await auditRows();
    const unknown = await admin('set-providers', '--workspace', ws, '--enabled', 'tesseract,nope');
    expect(unknown.code).toBe(1);
    expect(JSON.parse(unknown.stderr.trim()).error.code).toBe('unknown_provider');
    const missing = await admin('set-job-cap', '--workspace', '424242', '--cap', '2');
    expect(missing.code).toBe(1);
    expect(JSON.parse(missing.stderr.trim()).error.code).toBe('workspace_not_found');
    for (const args of [
      ['set-job-cap', '--workspace', ws, '--cap', '0'],
      ['set-budget', '--workspace', ws, '--micros', '-5'],
      ['set-budget', '--workspace', ws, '--global', '--micros', '5'],
      ['set-quota', '--bytes', '5'],
      ['set-providers', '--workspace', ws],
      ['set-budget', '--workspace', ws, '--micros', '5', '--surprise'],
      ['no-such-command'],
    ]) {
      const out = await admin(...args);
      expect(out.code, args.join(' ')).toBe(2);
      expect(out.stderr).toContain('usage: quire admin');
    }
    expect(await auditRows()).toEqual(before);
  });

  it('M4 resume-provider resumes a paused provider and records it', async () => {
    await withTransaction(db.pool, (client) =>
      pauseQueue(client, 'openai-chat', 'auth', undefined, new Date()),
    );
    const out = await admin('resume-provider', '--name', 'openai-chat');
    expect(out.code, out.stderr).toBe(0);
    expect(jsonOf(out)).toEqual({ provider: 'openai-chat', resumed: true, woken: 0 });
    const state = await db.pool.query(
      `SELECT status FROM provider_state WHERE provider = 'openai-chat'`,
    );
    expect(state.rows[0].status).toBe('active');
    expect((await auditRows()).at(-1)).toEqual({
      actor_kind: 'cli',
      actor_key_id: null,
      action: 'provider.resume',
      target: 'providers/openai-chat',
      workspace_id: null,
      before: { status: 'paused', reason: 'auth' },
      after: { status: 'active', reason: null, woken: 0 },
    });
  });
});
