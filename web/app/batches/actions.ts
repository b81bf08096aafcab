'use server';
import { refusalOf } from '@quire/web/lib/errors';
import { requireAct } from '@quire/web/lib/session';
import { cancelBatch } from '@quire/web/services/jobs';
import { refresh } from 'next/cache';

export interface BatchActionState {
  error: string | null;
  done: string | null;
}

/** J5: cancel every active job of the batch (web/services/jobs.ts `cancelBatch`). */
export async function cancelBatchAction(
  _previous: BatchActionState,
  form: FormData,
): Promise<BatchActionState> {
  const principal = await requireAct('batch.cancel');
  try {
    const { canceled } = await cancelBatch(principal, String(form.get('batchId') ?? ''));
    refresh();
    return { error: null, done: canceled === 1 ? '1 job canceled.' : `${canceled} jobs canceled.` };
  } catch (error) {
    return {
      error: refusalOf(error, 'The batch could not be canceled; try again.').message,
      done: null,
    };
  }
}
