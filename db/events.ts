import { afterCommit, type Pool, type PoolClient, type Queryable, wakeListeners } from './pool';

/**
 * E1/D10: the transactional outbox. Events are appended inside the transaction of the state
 * they report, with no lock shared between transactions: commits of different pages and
 * workspaces never wait for each other here. A row's `id` is its identity (the CloudEvent id
 * and webhook-id); ids are drawn in insert order, not commit order, so a transaction that
 * commits late can leave a lower id behind one already read.
 *
 * Readers therefore follow `position`, stamped after commit by the sequencer
 * (`quire_sequence_events`, migration 0090): gap-free, in the order rows are found committed,
 * one batch at a time under a row lock that only sequencers take. A reader stamps what is
 * committed before it reads (`sequenceEvents`), so `position > cursor` never skips an event:
 * a late commit is stamped later, with a higher position. Order within a stream holds: an
 * event written after another event's transaction committed (the next step of a job, the next
 * revision of a page, which wait for the row the first one locked) gets a higher position.
 *
 * Writers wake readers after commit (`quire_events`, coalesced per process), never from
 * inside their transaction: a NOTIFY there would take PostgreSQL's one notification lock at
 * every commit. The sequencer's own commit notifies again once positions are stamped.
 */

export const EVENTS_CHANNEL = 'quire_events';
/** Rows one sequencer transaction stamps at most. */
const SEQUENCE_BATCH = 5_000;

export interface NewEvent {
  workspaceId: number | null;
  type: string;
  subject?: string | null;
  data: Record<string, unknown>;
}

export interface OutboxEvent {
  /** The event's identity: the CloudEvent id, the webhook-id. */
  id: number;
  /** Its place in the outbox's commit order: the stream cursor (SSE `id:`, Last-Event-ID). */
  position: number;
  workspaceId: number | null;
  type: string;
  subject: string | null;
  data: Record<string, unknown>;
  createdAt: Date;
}

interface EventRow {
  id: number;
  position: number;
  workspace_id: number | null;
  type: string;
  subject: string | null;
  data: Record<string, unknown>;
  created_at: Date;
}

const EVENT_COLUMNS = 'id, position, workspace_id, type, subject, data, created_at';

function toEvent(r: EventRow): OutboxEvent {
  return {
    id: r.id,
    position: r.position,
    workspaceId: r.workspace_id,
    type: r.type,
    subject: r.subject,
    data: r.data,
    createdAt: r.created_at,
  };
}

/**
 * Appends one event in the caller's transaction and returns its outbox id. Takes no lock:
 * readers find it by position once it is committed and stamped. Inside `withTransaction`,
 * readers are woken right after the commit.
 */
export async function appendEvent(client: PoolClient, event: NewEvent): Promise<number> {
  const { rows } = await client.query<{ id: number }>(
    `INSERT INTO event_outbox (workspace_id, type, subject, data) VALUES ($1, $2, $3, $4) RETURNING id`,
    [event.workspaceId, event.type, event.subject ?? null, JSON.stringify(event.data)],
  );
  afterCommit(client, wakeOutboxReaders);
  return rows[0]!.id;
}

/**
 * Tells the outbox's readers that something was committed (`wakeListeners`: after the
 * writers' commits, one NOTIFY in flight per process).
 */
export function wakeOutboxReaders(pool: Pool): void {
  wakeListeners(pool, `SELECT pg_notify('${EVENTS_CHANNEL}', '')`);
}

/**
 * Stamps positions on every committed event that has none, and returns how many it stamped.
 * When it returns, every event committed before the call has a position. Run it with a pool
 * (each call its own transaction), never inside a business transaction: it would hold the
 * sequencer's lock to that transaction's end.
 */
export async function sequenceEvents(db: Queryable): Promise<number> {
  let total = 0;
  for (;;) {
    const { rows } = await db.query<{ stamped: number }>(
      'SELECT quire_sequence_events($1) AS stamped',
      [SEQUENCE_BATCH],
    );
    const stamped = rows[0]?.stamped ?? 0;
    total += stamped;
    if (stamped < SEQUENCE_BATCH) return total;
  }
}

/**
 * One workspace's events strictly after the stream position `after`, in position order (S1
 * resume). Stamps what is committed first, so nothing committed before the call is missed.
 */
export async function readEventsAfter(
  db: Queryable,
  workspaceId: number,
  after: number,
  limit: number,
): Promise<OutboxEvent[]> {
  await sequenceEvents(db);
  const { rows } = await db.query<EventRow>(
    `SELECT ${EVENT_COLUMNS} FROM event_outbox
      WHERE workspace_id = $1 AND position > $2 ORDER BY position LIMIT $3`,
    [workspaceId, after, limit],
  );
  return rows.map(toEvent);
}

/** Events of every workspace (and global ones) strictly after the position `after`, in order. */
export async function readAllEventsAfter(
  db: Queryable,
  after: number,
  limit: number,
): Promise<OutboxEvent[]> {
  await sequenceEvents(db);
  const { rows } = await db.query<EventRow>(
    `SELECT ${EVENT_COLUMNS} FROM event_outbox WHERE position > $1 ORDER BY position LIMIT $2`,
    [after, limit],
  );
  return rows.map(toEvent);
}

export async function getEvent(db: Queryable, id: number): Promise<OutboxEvent | undefined> {
  const { rows } = await db.query<EventRow>(
    `SELECT ${EVENT_COLUMNS} FROM event_outbox WHERE id = $1`,
    [id],
  );
  return rows[0] ? toEvent(rows[0]) : undefined;
}

/**
 * The highest stamped position (0 when empty), of one workspace when given. Everything
 * committed before the call is at or below it; anything committed later is stamped higher.
 */
export async function highWaterMark(db: Queryable, workspaceId?: number): Promise<number> {
  await sequenceEvents(db);
  const { rows } =
    workspaceId === undefined
      ? await db.query<{ max: number | null }>('SELECT max(position) AS max FROM event_outbox')
      : await db.query<{ max: number | null }>(
          'SELECT max(position) AS max FROM event_outbox WHERE workspace_id = $1',
          [workspaceId],
        );
  return rows[0]?.max ?? 0;
}

/**
 * The highest position ever stamped (0 before the first). Unlike `highWaterMark` it does not
 * fall when retention removes the newest rows, so a stream can tell a Last-Event-ID this
 * installation never issued (S1).
 */
export async function newestEventId(db: Queryable): Promise<number> {
  const { rows } = await db.query<{ last: number | null }>(
    'SELECT last_position AS last FROM event_outbox_sequence',
  );
  return rows[0]?.last ?? 0;
}

/** The stream position of an event, by its id (stamping it first when it is committed). */
export async function positionOf(db: Queryable, id: number): Promise<number | undefined> {
  await sequenceEvents(db);
  const { rows } = await db.query<{ position: number | null }>(
    'SELECT position FROM event_outbox WHERE id = $1',
    [id],
  );
  return rows[0]?.position ?? undefined;
}
