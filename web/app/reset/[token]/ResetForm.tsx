'use client';
import { FormError, NewPasswordFields } from '@quire/web/components/PasswordFields';
import { useActionState } from 'react';
import { type ResetState, resetPasswordAction } from './actions';

export function ResetForm({ token }: { token: string }) {
  const [state, action, pending] = useActionState<ResetState, FormData>(resetPasswordAction, {
    error: null,
  });
  return (
    <form action={action} className="card stack">
      <input type="hidden" name="token" value={token} />
      <NewPasswordFields />
      <FormError error={state.error} />
      <button type="submit" disabled={pending}>
        Set the password
      </button>
    </form>
  );
}
