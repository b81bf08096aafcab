import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MEDIA_KINDS } from '../../core/media';
import {
  ACTIVE_STATUSES,
  ATTEMPT_OUTCOMES,
  JOB_STATUSES,
  type JobStatus,
  STAGES,
  STAGES_BY_KIND,
} from '../../core/temporal';
import { DELIVERY_STATUSES, GIVEN_UP_DELIVERY_STATUSES } from '../../core/webhookStatus';
import { PENDING_CLEANUP_LIST } from '../../db/blobs';
import {
  ACTIVE_STATUS_LIST,
  ENDED_DELIVERY_LIST,
  GIVEN_UP_DELIVERY_LIST,
  sqlJobStatus,
  sqlJobStatuses,
  UNFINISHED_STATUS_LIST,
} from '../../db/sql';

const migrationsDir = new URL('../../migrations/', import.meta.url).pathname;
const schema = readdirSync(migrationsDir)
  .filter((name) => name.endsWith('.sql'))
  .sort()
  .map((name) => readFileSync(join(migrationsDir, name), 'utf8'))
  .join('\n');

/** The values a column's CHECK (col IN (...)) admits, inside `CREATE TABLE table (...);`. */
function checkedValues(table: string, column: string): string[] {
  const body = schema.match(new RegExp(`CREATE TABLE ${table} \\(([\\s\\S]*?)\\n\\);`))?.[1];
  const list = body?.match(
    new RegExp(`\\n  ${column}\\s+text[^\\n]*\\n?[^\\n]*CHECK \\(${column} IN \\(([^)]*)\\)\\)`),
  )?.[1];
  if (!list) throw new Error(`no CHECK list for ${table}.${column}`);
  return [...list.matchAll(/'([^']*)'/g)].map((m) => m[1] as string);
}

/** Every `status IN (...)` in the predicate of a partial index on `table`. */
function partialIndexLists(table: string): string[] {
  const indexes = schema.match(
    new RegExp(`CREATE (UNIQUE )?INDEX \\w+\\s+ON ${table} [^;]*;`, 'g'),
  );
  return (indexes ?? []).flatMap((sql) =>
    [...sql.matchAll(/WHERE[^;]*?status IN (\([^)]*\))/g)].map((m) => m[1] as string),
  );
}

describe('one source for each value list', () => {
  it('T2 each kind of page passes its stages in order and ends in commit', () => {
    expect(Object.keys(STAGES_BY_KIND).sort()).toEqual([...MEDIA_KINDS].sort());
    expect(STAGES_BY_KIND.image[0]).toBe('segment');
    expect(STAGES_BY_KIND.audio[0]).toBe('submit');
    for (const kind of MEDIA_KINDS) {
      const order: readonly string[] = STAGES_BY_KIND[kind];
      expect(order.at(-1)).toBe('commit');
      expect(new Set(order).size).toBe(order.length);
      for (const stage of order) expect(STAGES as readonly string[]).toContain(stage);
    }
  });

  it("J4 the schema's job statuses are core's, and every partial index reads the active ones", () => {
    expect(checkedValues('transcription_jobs', 'status')).toEqual([...JOB_STATUSES]);
    const lists = partialIndexLists('transcription_jobs');
    // 0001 one active job per page, 0006 slots held, 0007 twice, 0008 the reconciler's.
    expect(lists.length).toBeGreaterThanOrEqual(5);
    for (const list of lists) expect(list).toBe(ACTIVE_STATUS_LIST);
    expect(ACTIVE_STATUS_LIST).toBe(`(${ACTIVE_STATUSES.map((s) => `'${s}'`).join(', ')})`);
  });

  it("A1 the schema's attempt outcomes and page kinds are core's", () => {
    expect(checkedValues('transcription_job_attempts', 'outcome')).toEqual([...ATTEMPT_OUTCOMES]);
    expect(checkedValues('pages', 'kind')).toEqual([...MEDIA_KINDS]);
  });

  it("W2 the schema's delivery statuses are core's; given up and ended are the ones the relay leaves", () => {
    expect(checkedValues('webhook_deliveries', 'status')).toEqual([...DELIVERY_STATUSES]);
    expect(GIVEN_UP_DELIVERY_LIST).toBe(`('failed', 'dead')`);
    expect(GIVEN_UP_DELIVERY_STATUSES).not.toContain('pending');
    expect(ENDED_DELIVERY_LIST).toBe(`('succeeded', 'failed', 'dead')`);
  });

  it('O3 unfinished text is that of jobs that ended without committing', () => {
    expect(UNFINISHED_STATUS_LIST).toBe(`('failed', 'canceled', 'superseded')`);
  });

  it('U3 the pending cleanups read as the partial indexes on blob_cleanups define them', () => {
    const lists = partialIndexLists('blob_cleanups');
    expect(lists.length).toBeGreaterThanOrEqual(3);
    for (const list of lists) expect(list).toBe(PENDING_CLEANUP_LIST);
  });

  it('X a status outside core never reaches a statement', () => {
    expect(sqlJobStatus('pending')).toBe(`'pending'`);
    expect(sqlJobStatuses(['running', 'failed'])).toBe(`('running', 'failed')`);
    expect(() => sqlJobStatus("pending') OR (true" as JobStatus)).toThrow(RangeError);
  });
});
