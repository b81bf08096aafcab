'use client';
import { cancelJobAction, type JobActionState, rerunJobAction } from '@quire/web/app/jobs/actions';
import { useActionState } from 'react';

const initial: JobActionState = { error: null, done: null };

/**
 * Cancel (while active) and Re-run (always) for one job, each only where the role may (R8:
 * `mayCancel`, `mayRerun` from core/roles.ts).
 */
export function JobActions({
  jobId,
  active,
  mayCancel,
  mayRerun,
}: {
  jobId: string;
  active: boolean;
  mayCancel: boolean;
  mayRerun: boolean;
}) {
  const [cancelState, cancel, canceling] = useActionState(cancelJobAction, initial);
  const [rerunState, rerun, rerunning] = useActionState(rerunJobAction, initial);
  const error = cancelState.error ?? rerunState.error;
  return (
    <div className="actions">
      {active && mayCancel ? (
        <form
          action={cancel}
          data-act="job.cancel"
          onSubmit={(e) => {
            if (!window.confirm('Cancel this job? Work not yet committed is discarded.'))
              e.preventDefault();
          }}
        >
          <input type="hidden" name="jobId" value={jobId} />
          <button type="submit" className="danger" disabled={canceling}>
            {canceling ? 'Canceling…' : 'Cancel job'}
          </button>
        </form>
      ) : null}
      {mayRerun ? (
        <form action={rerun} data-act="job.rerun">
          <input type="hidden" name="jobId" value={jobId} />
          <button type="submit" className="secondary" disabled={rerunning}>
            {rerunning ? 'Starting…' : 'Re-run'}
          </button>
        </form>
      ) : null}
      <span role="status" aria-live="polite" className={error ? 'error' : 'muted'}>
        {error ?? cancelState.done ?? ''}
      </span>
    </div>
  );
}
