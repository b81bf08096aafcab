'use client';
import { FormError, NewPasswordFields } from '@quire/web/components/PasswordFields';
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
      <NewPasswordFields />
      <FormError error={state.error} />
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
