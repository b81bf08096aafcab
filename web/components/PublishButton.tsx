'use client';
import { type PublishState, publishPageAction } from '@quire/web/app/pages/actions';
import { useActionState } from 'react';

export function PublishButton({
  pageId,
  revision,
  publishedRevision,
}: {
  pageId: number;
  revision: number;
  publishedRevision: number | null;
}) {
  const [state, action, pending] = useActionState<PublishState, FormData>(publishPageAction, {
    error: null,
    done: null,
  });
  const current = publishedRevision === revision;
  return (
    <form action={action} className="actions" data-act="page.publish">
      <input type="hidden" name="pageId" value={pageId} />
      <input type="hidden" name="expectedRevision" value={revision} />
      <button type="submit" disabled={pending || current || revision === 0}>
        {pending
          ? 'Publishing…'
          : current
            ? `Revision ${revision} is public`
            : `Publish revision ${revision}`}
      </button>
      <span role="status" aria-live="polite" className={state.error ? 'error' : 'ok'}>
        {state.error ?? state.done ?? ''}
      </span>
    </form>
  );
}
