import type { Queryable } from './pool';

/**
 * The installation's live settings (D9, B1, U1): values operators change without a restart,
 * one `settings` row per key, a jsonb value; no row means unset. This module is the table's
 * one reader and writer.
 */
export const SETTINGS = {
  /** B1: the global daily spend budget, in micros. */
  globalDailyBudgetMicros: 'global_daily_budget_micros',
  /** U1: the global storage quota, in bytes. */
  globalQuotaBytes: 'global_quota_bytes',
} as const;

export type SettingKey = (typeof SETTINGS)[keyof typeof SETTINGS];

/**
 * A setting's value as a subquery, for a statement that reads it beside other rows in one
 * round trip (the budget check before every paid call); `keyParam` is the key's placeholder.
 */
export function settingValueSql(keyParam: string): string {
  return `(SELECT value FROM settings WHERE key = ${keyParam})`;
}

/** A setting's value as a count (bytes, micros): a finite number not below 0, else unset. */
export function settingCount(value: unknown): number | null {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : null;
}

/** A count setting; null when unset or not a count. */
export async function readCountSetting(db: Queryable, key: SettingKey): Promise<number | null> {
  const { rows } = await db.query<{ value: unknown }>(`SELECT value FROM settings WHERE key = $1`, [
    key,
  ]);
  return settingCount(rows[0]?.value);
}

/** Sets a count setting; null unsets it (deletes its row). */
export async function writeCountSetting(
  db: Queryable,
  key: SettingKey,
  value: number | null,
): Promise<void> {
  if (value === null) {
    await db.query('DELETE FROM settings WHERE key = $1', [key]);
    return;
  }
  await db.query(
    `INSERT INTO settings (key, value, updated_at) VALUES ($1, $2::jsonb, now())
     ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, updated_at = now()`,
    [key, JSON.stringify(value)],
  );
}
