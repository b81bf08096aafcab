/**
 * SQL fragments built from core's value lists, so a status set is written once and a single
 * status in a query is checked against its type. They are written into the statement, not
 * bound as parameters, because a partial index (`WHERE status IN ('pending', 'running')`,
 * migrations 0001, 0006 to 0008) serves only a query whose predicate visibly implies its own.
 * Only core's constants go in here: a value outside them throws, it is never interpolated.
 */
import {
  ACTIVE_STATUSES,
  ATTEMPT_OUTCOMES,
  isActiveStatus,
  JOB_STATUSES,
  type JobStatus,
} from '../core/temporal';
import {
  DELIVERY_STATUSES,
  type DeliveryStatus,
  GIVEN_UP_DELIVERY_STATUSES,
} from '../core/webhookStatus';

/** Quotes each of `known` once; asking for anything else is a programming error. */
function literals<T extends string>(known: readonly T[]): (value: T) => string {
  const quoted = new Map<string, string>(known.map((v) => [v, `'${v.replace(/'/g, "''")}'`]));
  return (value) => {
    const sql = quoted.get(value);
    if (sql === undefined) throw new RangeError(`not a known SQL value: ${String(value)}`);
    return sql;
  };
}

/** `'pending'`: one job status. */
export const sqlJobStatus = literals(JOB_STATUSES);
/** `('pending', 'failed')`: a set of job statuses. */
export function sqlJobStatuses(statuses: readonly JobStatus[]): string {
  return `(${statuses.map(sqlJobStatus).join(', ')})`;
}
/** `'running'`: one attempt outcome. */
export const sqlAttemptOutcome = literals(ATTEMPT_OUTCOMES);
/** `'pending'`: one webhook delivery status. */
export const sqlDeliveryStatus = literals(DELIVERY_STATUSES);
function sqlDeliveryStatuses(statuses: readonly DeliveryStatus[]): string {
  return `(${statuses.map(sqlDeliveryStatus).join(', ')})`;
}

/** `('pending', 'running')`: the statuses of a job that still holds its page. */
export const ACTIVE_STATUS_LIST = sqlJobStatuses(ACTIVE_STATUSES);

/**
 * `('failed', 'canceled', 'superseded')`: the statuses of a job that ended without
 * committing, whose saved text served only its own next attempt.
 */
export const UNFINISHED_STATUS_LIST = sqlJobStatuses(
  JOB_STATUSES.filter((s) => s !== 'completed' && !isActiveStatus(s)),
);

/** `('failed', 'dead')`: deliveries the relay gave up on. */
export const GIVEN_UP_DELIVERY_LIST = sqlDeliveryStatuses(GIVEN_UP_DELIVERY_STATUSES);

/** `('succeeded', 'failed', 'dead')`: deliveries that will not be sent again unless replayed. */
export const ENDED_DELIVERY_LIST = sqlDeliveryStatuses(
  DELIVERY_STATUSES.filter((s) => s !== 'pending'),
);
