import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  checkBudget,
  getGlobalBudget,
  setGlobalBudget,
  setWorkspaceBudget,
  spendSummary,
  utcDayBounds,
} from '../../db/budget';
import { NotFoundError } from '../../db/errors';
import { ensureTimePartitions } from '../../db/partitions';
import { createTestDatabase, type TestDatabase } from '../support/db';

let db: TestDatabase;
let ws: number;
let other: number;

async function spend(workspaceId: number, provider: string, micros: number, at: Date) {
  await db.pool.query(
    `INSERT INTO provider_calls (workspace_id, provider, operation, units, unit, cost_micros, outcome, occurred_at)
     VALUES ($1, $2, 'recognize', 1, 'line', $3, 'ok', $4)`,
    [workspaceId, provider, micros, at],
  );
}

beforeAll(async () => {
  db = await createTestDatabase();
  // D11: the ledger is partitioned by month; these tests spend on days years ahead.
  await ensureTimePartitions(db.pool, new Date('2030-03-10T00:00:00Z'), 0);
});

afterAll(async () => {
  await db.drop();
});

beforeEach(async () => {
  await db.pool.query('TRUNCATE provider_calls');
  await db.pool.query('DELETE FROM settings');
  const a = await db.pool.query(`INSERT INTO workspaces (name) VALUES ('budget-a') RETURNING id`);
  const b = await db.pool.query(`INSERT INTO workspaces (name) VALUES ('budget-b') RETURNING id`);
  ws = a.rows[0].id;
  other = b.rows[0].id;
});

const at = (iso: string) => new Date(iso);

describe('B1 daily spend budgets (UTC day, injected clock)', () => {
  it('B1 no budget set means unlimited', async () => {
    await spend(ws, 'openai-chat', 10_000_000, at('2030-03-10T12:00:00Z'));
    const check = await checkBudget(db.pool, {
      workspaceId: ws,
      provider: 'openai-chat',
      estimatedMicros: 5_000_000,
      now: at('2030-03-10T13:00:00Z'),
    });
    expect(check).toEqual({ ok: true });
  });

  it('B1 a workspace budget is exhausted by the day spend plus the estimate, and resets at the next UTC midnight', async () => {
    await setWorkspaceBudget(db.pool, ws, 1_000);
    await spend(ws, 'openai-chat', 600, at('2030-03-10T00:00:00Z'));
    await spend(ws, 'whisper', 300, at('2030-03-10T23:59:59.999Z'));
    // Yesterday's spend and another workspace's spend do not count.
    await spend(ws, 'openai-chat', 5_000, at('2030-03-09T23:59:59.999Z'));
    await spend(other, 'openai-chat', 5_000, at('2030-03-10T10:00:00Z'));

    const args = { workspaceId: ws, provider: 'openai-chat' };
    const noon = at('2030-03-10T12:00:00Z');
    expect(await checkBudget(db.pool, { ...args, estimatedMicros: 100, now: noon })).toEqual({
      ok: true,
    });
    const over = await checkBudget(db.pool, { ...args, estimatedMicros: 101, now: noon });
    expect(over).toEqual({
      ok: false,
      exceeded: 'workspace',
      spentMicros: 900,
      budgetMicros: 1_000,
      resetsAt: at('2030-03-11T00:00:00Z'),
    });

    const lastMs = at('2030-03-10T23:59:59.999Z');
    expect((await checkBudget(db.pool, { ...args, estimatedMicros: 101, now: lastMs })).ok).toBe(
      false,
    );
    const midnight = at('2030-03-11T00:00:00Z');
    expect(await checkBudget(db.pool, { ...args, estimatedMicros: 101, now: midnight })).toEqual({
      ok: true,
    });
  });

  it('B1 the global budget sums every workspace', async () => {
    await setGlobalBudget(db.pool, 2_000);
    expect(await getGlobalBudget(db.pool)).toBe(2_000);
    await spend(ws, 'openai-chat', 900, at('2030-03-10T01:00:00Z'));
    await spend(other, 'whisper', 1_000, at('2030-03-10T02:00:00Z'));
    const now = at('2030-03-10T03:00:00Z');
    const check = await checkBudget(db.pool, {
      workspaceId: ws,
      provider: 'whisper',
      estimatedMicros: 200,
      now,
    });
    expect(check).toMatchObject({
      ok: false,
      exceeded: 'global',
      spentMicros: 1_900,
      budgetMicros: 2_000,
    });
    expect(
      (
        await checkBudget(db.pool, {
          workspaceId: ws,
          provider: 'whisper',
          estimatedMicros: 100,
          now,
        })
      ).ok,
    ).toBe(true);
    await setGlobalBudget(db.pool, null);
    expect(await getGlobalBudget(db.pool)).toBeNull();
    expect(
      (
        await checkBudget(db.pool, {
          workspaceId: ws,
          provider: 'whisper',
          estimatedMicros: 200,
          now,
        })
      ).ok,
    ).toBe(true);
  });

  it('B1 the workspace budget is reported before the global one; a free call always fits', async () => {
    await setWorkspaceBudget(db.pool, ws, 0);
    await setGlobalBudget(db.pool, 0);
    const now = at('2030-03-10T03:00:00Z');
    expect(
      await checkBudget(db.pool, { workspaceId: ws, provider: 'x', estimatedMicros: 1, now }),
    ).toMatchObject({
      exceeded: 'workspace',
    });
    expect(
      await checkBudget(db.pool, { workspaceId: other, provider: 'x', estimatedMicros: 1, now }),
    ).toMatchObject({
      exceeded: 'global',
    });
    expect(
      await checkBudget(db.pool, { workspaceId: ws, provider: 'x', estimatedMicros: 0, now }),
    ).toEqual({
      ok: true,
    });
  });

  it('B1 a settings value that is JSON null is unlimited', async () => {
    await db.pool.query(
      `INSERT INTO settings (key, value) VALUES ('global_daily_budget_micros', 'null')`,
    );
    expect(await getGlobalBudget(db.pool)).toBeNull();
  });

  it('B1 setting budgets validates input and the workspace', async () => {
    await expect(setWorkspaceBudget(db.pool, ws, -1)).rejects.toThrow(RangeError);
    await expect(setGlobalBudget(db.pool, 1.5)).rejects.toThrow(RangeError);
    await expect(setWorkspaceBudget(db.pool, 999_999, 10)).rejects.toBeInstanceOf(NotFoundError);
    await setWorkspaceBudget(db.pool, ws, null);
    const { rows } = await db.pool.query(
      'SELECT daily_budget_micros FROM workspaces WHERE id = $1',
      [ws],
    );
    expect(rows[0].daily_budget_micros).toBeNull();
  });

  it('B1 spendSummary shows today per provider against the budgets', async () => {
    await setWorkspaceBudget(db.pool, ws, 5_000);
    await setGlobalBudget(db.pool, 50_000);
    await spend(ws, 'openai-chat', 700, at('2030-03-10T01:00:00Z'));
    await spend(ws, 'openai-chat', 300, at('2030-03-10T02:00:00Z'));
    await spend(ws, 'whisper', 1_500, at('2030-03-10T03:00:00Z'));
    await spend(ws, 'whisper', 9_999, at('2030-03-11T00:00:00Z'));
    await spend(other, 'whisper', 2_000, at('2030-03-10T04:00:00Z'));
    const summary = await spendSummary(db.pool, ws, at('2030-03-10T20:00:00Z'));
    expect(summary).toEqual({
      day: '2030-03-10',
      resetsAt: at('2030-03-11T00:00:00Z'),
      workspace: { spentMicros: 2_500, budgetMicros: 5_000 },
      global: { spentMicros: 4_500, budgetMicros: 50_000 },
      providers: [
        { provider: 'whisper', spentMicros: 1_500, calls: 1 },
        { provider: 'openai-chat', spentMicros: 1_000, calls: 2 },
      ],
    });
  });

  it('B1 utcDayBounds uses the UTC day, not the local one', () => {
    const { start, end } = utcDayBounds(at('2030-03-10T23:30:00-05:00'));
    expect(start.toISOString()).toBe('2030-03-11T00:00:00.000Z');
    expect(end.toISOString()).toBe('2030-03-12T00:00:00.000Z');
  });
});
