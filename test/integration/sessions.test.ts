import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI_ACTOR } from '../../core/actor';
import { parseConfig } from '../../core/config';
import { createAccount, putMember } from '../../db/accounts';
import { createSession, endSession, hashSessionId, touchSession } from '../../db/sessions';
import { addApiKey, authenticateApiKey, createWorkspace, revokeApiKey } from '../../db/workspaces';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { waitUntil } from '../support/wait';

/**
 * R3: the session table's lifetimes and revocation, against a real PostgreSQL: idle and
 * absolute lifetimes (settings), a revoked key's console sessions, and nothing but a hash of
 * the cookie's id at rest.
 */
let db: TestDatabase;
let ws: number;
let accountId: number;

beforeAll(async () => {
  db = await createTestDatabase();
  ws = (await createWorkspace(db.pool, 'Lifetimes')).workspace.id;
  accountId = (
    await createAccount(db.pool, CLI_ACTOR, {
      email: 'life@sessions.test',
      name: 'Life',
      passwordHash: null,
    })
  ).id;
  await putMember(db.pool, CLI_ACTOR, { workspaceId: ws, accountId, role: 'editor' });
});

afterAll(async () => {
  await db?.drop();
});

const count = async (sql: string, params: unknown[]) =>
  (await db.pool.query(sql, params)).rows[0].n as number;

describe('server-side sessions (R3)', () => {
  it('R3 idle and absolute lifetimes are settings with defaults of 12 hours and 7 days', () => {
    const defaults = parseConfig({});
    expect(defaults.QUIRE_SESSION_IDLE_SECONDS).toBe(12 * 3600);
    expect(defaults.QUIRE_SESSION_ABSOLUTE_SECONDS).toBe(7 * 86_400);
    const set = parseConfig({
      QUIRE_SESSION_IDLE_SECONDS: '600',
      QUIRE_SESSION_ABSOLUTE_SECONDS: '3600',
    });
    expect([set.QUIRE_SESSION_IDLE_SECONDS, set.QUIRE_SESSION_ABSOLUTE_SECONDS]).toEqual([
      600, 3600,
    ]);
    expect(() => parseConfig({ QUIRE_SESSION_IDLE_SECONDS: '1' })).toThrow();
  });

  it('R3 a session unused for longer than the idle lifetime ends; one used keeps going until its absolute end', async () => {
    const idle = await createSession(db.pool, { accountId, workspaceId: ws }, 3600);
    const used = await createSession(db.pool, { accountId, workspaceId: ws }, 3);
    expect((await touchSession(db.pool, idle, 2))?.kind).toBe('account');
    // `used` is touched every half second: within its idle lifetime of 2 s, until 3 s pass.
    const started = Date.now();
    await waitUntil(async () => (await touchSession(db.pool, used, 2)) === undefined, 8_000, 500);
    expect(Date.now() - started).toBeGreaterThanOrEqual(2_000);
    // `idle` was not touched for over 2 s: ended by its idle lifetime, not its absolute one.
    expect(await touchSession(db.pool, idle, 2)).toBeUndefined();
    expect(await touchSession(db.pool, idle, 3600)).toMatchObject({ role: 'editor' });
  });

  it('R3 the cookie id is stored only as its SHA-256; sign-out removes the row', async () => {
    const id = await createSession(db.pool, { accountId, workspaceId: ws }, 3600);
    expect(
      await count('SELECT count(*)::int AS n FROM sessions WHERE id_hash = $1', [
        hashSessionId(id),
      ]),
    ).toBe(1);
    const { rows } = await db.pool.query('SELECT to_jsonb(s)::text AS row FROM sessions s');
    expect(rows.map((r) => r.row).join('\n')).not.toContain(id.slice(3));
    await endSession(db.pool, id);
    expect(await touchSession(db.pool, id, 3600)).toBeUndefined();
  });

  it('R1 the development owner and operator that npm start prints can sign in, and a second start keeps their passwords', async () => {
    const { ensureDevWorkspace } = await import('../../scripts/lib/devWorkspace');
    const { findAccountByEmail, memberRole } = await import('../../db/accounts');
    const { verifyPassword } = await import('../../core/passwords');
    const { mkdtempSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const { join } = await import('node:path');
    const file = join(mkdtempSync(join(tmpdir(), 'quire-dev-')), 'dev-workspace.json');
    const first = await ensureDevWorkspace(db.url, file);
    const owner = (await findAccountByEmail(db.pool, first.owner.email))!;
    expect(await verifyPassword(owner.passwordHash, first.owner.password)).toBe(true);
    expect(await memberRole(db.pool, first.workspaceId, owner.id)).toBe('owner');
    const operator = (await findAccountByEmail(db.pool, first.operator.email))!;
    expect(operator.operator).toBe(true);
    expect(await verifyPassword(operator.passwordHash, first.operator.password)).toBe(true);
    expect((await authenticateApiKey(db.pool, first.apiKey))?.workspaceId).toBe(first.workspaceId);
    expect(await ensureDevWorkspace(db.url, file)).toEqual(first);
  });

  it('R1 R3 revoking an API key ends the console sessions entered with it', async () => {
    const key = await addApiKey(db.pool, ws, 'console');
    const principal = (await authenticateApiKey(db.pool, key))!;
    const id = await createSession(
      db.pool,
      { apiKeyId: principal.actor.id, workspaceId: ws },
      3600,
    );
    expect((await touchSession(db.pool, id, 3600))?.kind).toBe('apiKey');
    await revokeApiKey(
      db.pool,
      { kind: 'account', id: accountId, name: 'Life' },
      {
        workspaceId: ws,
        apiKeyId: principal.actor.id,
      },
    );
    expect(await touchSession(db.pool, id, 3600)).toBeUndefined();
    expect(
      await count('SELECT count(*)::int AS n FROM sessions WHERE api_key_id = $1', [
        principal.actor.id,
      ]),
    ).toBe(0);
  });
});
