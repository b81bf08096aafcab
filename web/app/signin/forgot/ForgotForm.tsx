'use client';
import { FormError } from '@quire/web/components/PasswordFields';
import { useActionState } from 'react';
import { type ForgotState, requestResetAction } from './actions';

export function ForgotForm() {
  const [state, action, pending] = useActionState<ForgotState, FormData>(requestResetAction, {
    error: null,
    sent: false,
  });
  return (
    <form action={action} className="card stack">
      <label htmlFor="email">Email</label>
      <input id="email" name="email" type="email" autoComplete="username" required />
      <FormError error={state.error} />
      {state.sent ? (
        <p role="status" data-sent>
          If an account has this address, a link to set a new password is on its way to it. The link
          works once.
        </p>
      ) : null}
      <button type="submit" disabled={pending}>
        Send a reset link
      </button>
    </form>
  );
}
