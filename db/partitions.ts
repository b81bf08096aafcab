import { type Pool, type PoolClient, type Queryable, withTransaction } from './pool';

/**
 * D11: the append-mostly tables are range-partitioned by time, one partition per UTC month
 * (migration 0101). Quire keeps them itself, with no extension: each maintenance pass adds the
 * months ahead before rows need them, and retention (db/retention.ts) removes a month by
 * detaching and dropping its partition, never by deleting rows.
 *
 * Deliveries and their attempts are partitioned by their event's time, so the three webhook
 * tables always hold the same months and a month of them leaves together.
 */
export const TIME_PARTITIONED_TABLES = [
  'event_outbox',
  'webhook_deliveries',
  'webhook_delivery_attempts',
  'provider_calls',
] as const;
export type TimePartitionedTable = (typeof TIME_PARTITIONED_TABLES)[number];

/**
 * Months kept ready beyond the current one. A row with no partition to go to cannot be
 * written, and an event belongs to the commit of the state it reports: a year ahead (a few
 * dozen empty tables) means maintenance that stopped for months still costs no commit. Each
 * worker prepares them at start too.
 */
export const MONTHS_AHEAD = 12;

/**
 * How long a partition DDL waits for a lock before giving up until the next pass. DETACH
 * takes ACCESS EXCLUSIVE on the parent, and while it waits every new reader queues behind it:
 * a short wait keeps a long query elsewhere from turning into a stall for everyone.
 */
export const PARTITION_LOCK_TIMEOUT = '2s';

export interface TimePartition {
  name: string;
  /** Null for the first partition, which reaches back to all time (the pre-D11 rows). */
  from: Date | null;
  to: Date;
}

/** The partitions of `parent`, oldest first. */
export async function listTimePartitions(
  db: Queryable,
  parent: TimePartitionedTable,
): Promise<TimePartition[]> {
  const { rows } = await db.query<{ name: string; from_at: Date | null; to_at: Date }>(
    `SELECT c.relname AS name,
            nullif(substring(pg_get_expr(c.relpartbound, c.oid) FROM 'FROM \\(''([^'']+)''\\)'), '')::timestamptz AS from_at,
            substring(pg_get_expr(c.relpartbound, c.oid) FROM 'TO \\(''([^'']+)''\\)')::timestamptz AS to_at
       FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
      WHERE i.inhparent = $1::regclass
      ORDER BY to_at`,
    [parent],
  );
  return rows.map((r) => ({ name: r.name, from: r.from_at, to: r.to_at }));
}

/** The first instant of the UTC month `months` after the one holding `at`. */
export function monthStart(at: Date, months = 0): Date {
  return new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth() + months, 1));
}

/**
 * Adds the monthly partitions every time-partitioned table lacks up to the end of the month
 * `MONTHS_AHEAD` after `now`, each from where the last one ends. Returns the names added.
 * Idempotent, and safe beside another pass doing the same (the second finds the name taken).
 */
export async function ensureTimePartitions(
  pool: Pool,
  now = new Date(),
  monthsAhead = MONTHS_AHEAD,
): Promise<string[]> {
  const until = monthStart(now, monthsAhead + 1);
  const added: string[] = [];
  for (const parent of TIME_PARTITIONED_TABLES) {
    const partitions = await listTimePartitions(pool, parent);
    let from = partitions.at(-1)?.to ?? monthStart(now);
    while (from < until) {
      const to = monthStart(from, 1);
      await withTransaction(pool, async (client) => {
        await client.query(`SET LOCAL lock_timeout = '${PARTITION_LOCK_TIMEOUT}'`);
        const { rows } = await client.query<{ name: string }>(
          'SELECT quire_add_time_partition($1, $2, $3) AS name',
          [parent, from, to],
        );
        added.push(rows[0]!.name);
      });
      from = to;
    }
  }
  return added;
}

/**
 * Detaches and drops partitions, in the order given (a referencing table's before the table
 * it references: DETACH checks that nothing still refers to the rows leaving). Runs in the
 * caller's transaction, which should hold the parents' locks already.
 */
export async function dropTimePartitions(
  client: PoolClient,
  partitions: Array<{ parent: TimePartitionedTable; name: string }>,
): Promise<void> {
  for (const { parent, name } of partitions) {
    await client.query(`ALTER TABLE ${ident(parent)} DETACH PARTITION ${ident(name)}`);
    await client.query(`DROP TABLE ${ident(name)}`);
  }
}

/** Partition names come from the catalogue; quoted all the same. */
function ident(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}
