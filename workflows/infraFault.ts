import { backoffCeilingMs } from '../core/backoff';

/**
 * D7: the pause before running an attempt again after an outage of Quire's own
 * infrastructure: 1 s, doubling to 30 s, so that a failover of a minute or two costs a few
 * history events and the job resumes within seconds of the dependency's return.
 */
export function infraFaultPauseMs(faults: number): number {
  return backoffCeilingMs(faults, 1_000, 30_000);
}
