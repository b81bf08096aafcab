'use client';
import { type BatchActionState, cancelBatchAction } from '@quire/web/app/batches/actions';
import { useActionState } from 'react';

export function CancelBatchButton({ batchId, active }: { batchId: string; active: number }) {
  const [state, action, pending] = useActionState<BatchActionState, FormData>(cancelBatchAction, {
    error: null,
    done: null,
  });
  return (
    <form
      action={action}
      className="actions"
      data-act="batch.cancel"
      onSubmit={(e) => {
        if (
          !window.confirm(
            `Cancel this batch? ${active} active job(s) stop and nothing more is committed.`,
          )
        )
          e.preventDefault();
      }}
    >
      <input type="hidden" name="batchId" value={batchId} />
      <button type="submit" className="danger" disabled={pending || active === 0}>
        {pending ? 'Canceling…' : 'Cancel batch'}
      </button>
      <span role="status" aria-live="polite" className={state.error ? 'error' : 'muted'}>
        {state.error ?? state.done ?? (active === 0 ? 'No job of this batch is still active.' : '')}
      </span>
    </form>
  );
}
