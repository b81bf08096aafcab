'use client';
import { type ReplayState, replayDeliveryAction } from '@quire/web/app/webhooks/actions';
import { useActionState } from 'react';

export function ReplayButton({ deliveryId }: { deliveryId: number }) {
  const [state, action, pending] = useActionState<ReplayState, FormData>(replayDeliveryAction, {
    error: null,
    done: null,
  });
  return (
    <form action={action} className="inline-form" data-act="webhook.replay">
      <input type="hidden" name="deliveryId" value={deliveryId} />
      <button
        type="submit"
        className="secondary"
        disabled={pending}
        aria-label={`Replay delivery ${deliveryId}`}
      >
        {pending ? 'Replaying…' : 'Replay'}
      </button>
      <span role="status" aria-live="polite" className={state.error ? 'error' : 'ok small'}>
        {state.error ?? state.done ?? ''}
      </span>
    </form>
  );
}
