import type { PoolClient, Queryable } from './pool';

/**
 * E1: the transactional outbox. Events are appended inside the transaction of the state
 * they report. A transaction-level advisory lock taken right before the insert serialises
 * writers from that point to commit, so ids become visible in commit order and a reader
 * that follows `id > cursor` never skips an event committed late. The lock is taken as late
 * as possible so it is held only for the tail of the business transaction.
 */
export const OUTBOX_ORDER_LOCK = 7_401_119_002;

export interface NewEvent {
  workspaceId: number | null;
  type: string;
  subject?: string | null;
  data: Record<string, unknown>;
}

export interface OutboxEvent {
  id: number;
  workspaceId: number | null;
  type: string;
  subject: string | null;
  data: Record<string, unknown>;
  createdAt: Date;
}

interface EventRow {
  id: number;
  workspace_id: number | null;
  type: string;
  subject: string | null;
  data: Record<string, unknown>;
  created_at: Date;
}

function toEvent(r: EventRow): OutboxEvent {
  return {
    id: r.id,
    workspaceId: r.workspace_id,
    type: r.type,
    subject: r.subject,
    data: r.data,
    createdAt: r.created_at,
  };
}

/**
 * Appends one event in the caller's transaction and returns its outbox id. Must run inside
 * `withTransaction`: outside one the advisory lock would be released at once.
 */
export async function appendEvent(client: PoolClient, event: NewEvent): Promise<number> {
  await client.query('SELECT pg_advisory_xact_lock($1)', [OUTBOX_ORDER_LOCK]);
  const { rows } = await client.query<{ id: number }>(
    `INSERT INTO event_outbox (workspace_id, type, subject, data) VALUES ($1, $2, $3, $4) RETURNING id`,
    [event.workspaceId, event.type, event.subject ?? null, JSON.stringify(event.data)],
  );
  return rows[0]!.id;
}

/** One workspace's events strictly after `afterId`, oldest first (S1 resume). */
export async function readEventsAfter(
  db: Queryable,
  workspaceId: number,
  afterId: number,
  limit: number,
): Promise<OutboxEvent[]> {
  const { rows } = await db.query<EventRow>(
    `SELECT id, workspace_id, type, subject, data, created_at FROM event_outbox
      WHERE workspace_id = $1 AND id > $2 ORDER BY id LIMIT $3`,
    [workspaceId, afterId, limit],
  );
  return rows.map(toEvent);
}

/** Events of every workspace (and global ones) strictly after `afterId`, oldest first. */
export async function readAllEventsAfter(
  db: Queryable,
  afterId: number,
  limit: number,
): Promise<OutboxEvent[]> {
  const { rows } = await db.query<EventRow>(
    `SELECT id, workspace_id, type, subject, data, created_at FROM event_outbox
      WHERE id > $1 ORDER BY id LIMIT $2`,
    [afterId, limit],
  );
  return rows.map(toEvent);
}

export async function getEvent(db: Queryable, id: number): Promise<OutboxEvent | undefined> {
  const { rows } = await db.query<EventRow>(
    'SELECT id, workspace_id, type, subject, data, created_at FROM event_outbox WHERE id = $1',
    [id],
  );
  return rows[0] ? toEvent(rows[0]) : undefined;
}

/**
 * The highest committed outbox id (0 when empty), of one workspace when given. Everything at
 * or below it is visible now; anything committed later gets a higher id.
 */
export async function highWaterMark(db: Queryable, workspaceId?: number): Promise<number> {
  const { rows } =
    workspaceId === undefined
      ? await db.query<{ max: number | null }>('SELECT max(id) AS max FROM event_outbox')
      : await db.query<{ max: number | null }>(
          'SELECT max(id) AS max FROM event_outbox WHERE workspace_id = $1',
          [workspaceId],
        );
  return rows[0]?.max ?? 0;
}

/**
 * The highest outbox id ever handed out (0 before the first). Unlike `highWaterMark` it does
 * not fall when retention removes the newest rows, so a stream can tell a Last-Event-ID this
 * installation never issued (S1).
 */
export async function newestEventId(db: Queryable): Promise<number> {
  const { rows } = await db.query<{ last: string | null }>(
    `SELECT pg_sequence_last_value(pg_get_serial_sequence('event_outbox', 'id')::regclass) AS last`,
  );
  return Number(rows[0]?.last ?? 0);
}
