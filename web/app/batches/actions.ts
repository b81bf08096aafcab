'use server';
import { NotFoundError } from '@quire/db/errors';
import { quireClient } from '@quire/web/lib/server';
import { requirePrincipal } from '@quire/web/lib/session';
import { refresh } from 'next/cache';

export interface BatchActionState {
  error: string | null;
  done: string | null;
}

/** J5: cancels every active job of the batch in one transaction, then their workflows. */
export async function cancelBatchAction(
  _previous: BatchActionState,
  form: FormData,
): Promise<BatchActionState> {
  const principal = await requirePrincipal();
  const batchId = String(form.get('batchId') ?? '');
  try {
    const client = await quireClient();
    const { canceled } = await client.cancelBatch(principal.workspaceId, batchId);
    refresh();
    return { error: null, done: canceled === 1 ? '1 job canceled.' : `${canceled} jobs canceled.` };
  } catch (error) {
    if (error instanceof NotFoundError) return { error: 'That batch does not exist.', done: null };
    return { error: 'The batch could not be canceled; try again.', done: null };
  }
}
