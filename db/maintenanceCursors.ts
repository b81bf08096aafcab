import type { Queryable } from './pool';

/**
 * D13: where a maintenance pass that works in slices stopped (migration 0061). An empty
 * position, or none yet, is the beginning.
 */
export async function readMaintenanceCursor(
  db: Queryable,
  name: string,
): Promise<string | undefined> {
  const { rows } = await db.query<{ position: string }>(
    'SELECT position FROM maintenance_cursors WHERE name = $1',
    [name],
  );
  return rows[0]?.position || undefined;
}

export async function writeMaintenanceCursor(
  db: Queryable,
  name: string,
  position: string,
): Promise<void> {
  await db.query(
    `INSERT INTO maintenance_cursors (name, position) VALUES ($1, $2)
     ON CONFLICT (name) DO UPDATE SET position = EXCLUDED.position, updated_at = now()`,
    [name, position],
  );
}
