'use client';
import { useActionState } from 'react';
import { type ChangePasswordState, changePasswordAction } from './actions';

export function ChangePasswordForm() {
  const [state, action, pending] = useActionState<ChangePasswordState, FormData>(
    changePasswordAction,
    { error: null, done: null },
  );
  return (
    <form action={action} className="card stack">
      <label htmlFor="current">Current password</label>
      <input id="current" name="current" type="password" required autoComplete="current-password" />
      <label htmlFor="password">New password (12 characters or more)</label>
      <input id="password" name="password" type="password" required autoComplete="new-password" />
      <label htmlFor="confirm">The new password again</label>
      <input id="confirm" name="confirm" type="password" required autoComplete="new-password" />
      {state.error ? (
        <p role="alert" className="error">
          {state.error}
        </p>
      ) : null}
      {state.done ? (
        <p role="status" data-done>
          {state.done}
        </p>
      ) : null}
      <button type="submit" disabled={pending}>
        Change the password
      </button>
    </form>
  );
}
