/**
 * SQL fragments built from core's value lists, so a status set is written once. Only
 * constants go in here: nothing a caller passes is ever interpolated.
 */
import { ACTIVE_STATUSES } from '../core/temporal';

function sqlList(values: readonly string[]): string {
  return `(${values.map((v) => `'${v.replace(/'/g, "''")}'`).join(', ')})`;
}

/** `('pending', 'running')`: the statuses of a job that still holds its page. */
export const ACTIVE_STATUS_LIST = sqlList(ACTIVE_STATUSES);
