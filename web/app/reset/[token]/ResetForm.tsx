'use client';
import { useActionState } from 'react';
import { type ResetState, resetPasswordAction } from './actions';

export function ResetForm({ token }: { token: string }) {
  const [state, action, pending] = useActionState<ResetState, FormData>(resetPasswordAction, {
    error: null,
  });
  return (
    <form action={action} className="card stack">
      <input type="hidden" name="token" value={token} />
      <label htmlFor="password">New password (12 characters or more)</label>
      <input id="password" name="password" type="password" required autoComplete="new-password" />
      <label htmlFor="confirm">The new password again</label>
      <input id="confirm" name="confirm" type="password" required autoComplete="new-password" />
      {state.error ? (
        <p role="alert" className="error">
          {state.error}
        </p>
      ) : null}
      <button type="submit" disabled={pending}>
        Set the password
      </button>
    </form>
  );
}
