'use client';
import type { EngineModel } from '@quire/core/engineModels';
import { cancelJobAction, type JobActionState, rerunJobAction } from '@quire/web/app/jobs/actions';
import { useActionState, useId } from 'react';
import { modelLabel } from './UploadChoices';

const initial: JobActionState = { error: null, done: null };

/**
 * Cancel (while active) and Re-run (always) for one job, each only where the role may (R8:
 * `mayCancel`, `mayRerun` from core/roles.ts); V9: the re-run may name another of the
 * installed models (engine and language), else it reads as the job did; C2, V3: it keeps the
 * lines people edited or verified unless the person chooses to replace them.
 */
export function JobActions({
  jobId,
  active,
  mayCancel,
  mayRerun,
  models = [],
}: {
  jobId: string;
  active: boolean;
  mayCancel: boolean;
  mayRerun: boolean;
  models?: EngineModel[];
}) {
  const engineId = useId();
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
        <form action={rerun} data-act="job.rerun" className="inline-form rerun-form">
          <input type="hidden" name="jobId" value={jobId} />
          {models.length > 0 ? (
            <>
              <label htmlFor={engineId}>Re-run with</label>{' '}
              <select id={engineId} name="engine" defaultValue="">
                <option value="">the same engine and language</option>
                {models.map((m) => (
                  <option key={`${m.provider}:${m.language}`} value={`${m.provider}|${m.language}`}>
                    {modelLabel(m)}
                  </option>
                ))}
              </select>{' '}
            </>
          ) : null}
          <fieldset className="rerun-lines">
            <legend className="sr-only">Lines people edited or verified</legend>
            <label className="rerun-choice">
              <input type="radio" name="humanLines" value="keep" defaultChecked /> Keep human lines
            </label>
            <label className="rerun-choice">
              <input type="radio" name="humanLines" value="replace" /> Replace them
            </label>
          </fieldset>{' '}
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
