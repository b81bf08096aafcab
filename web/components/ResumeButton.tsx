'use client';
import { type ResumeState, resumeProviderAction } from '@quire/web/app/providers/actions';
import { useActionState } from 'react';

/** Resume one paused provider; errors are announced next to the button. */
export function ResumeButton({ provider }: { provider: string }) {
  const [state, action, pending] = useActionState<ResumeState, FormData>(resumeProviderAction, {
    error: null,
    resumed: null,
  });
  return (
    <form action={action} className="inline-form" data-act="provider.resume">
      <input type="hidden" name="provider" value={provider} />
      <button type="submit" disabled={pending} aria-label={`Resume ${provider}`}>
        {pending ? 'Resuming…' : 'Resume'}
      </button>
      {state.error ? (
        <span role="alert" className="error">
          {state.error}
        </span>
      ) : null}
    </form>
  );
}
