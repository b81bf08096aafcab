'use client';
import { FormError } from '@quire/web/components/PasswordFields';
import { useActionState } from 'react';
import { type AcceptState, acceptInvitationAction } from './actions';

export function AcceptForm({ token }: { token: string }) {
  const [state, action, pending] = useActionState<AcceptState, FormData>(acceptInvitationAction, {
    error: null,
  });
  return (
    <form action={action} className="card stack">
      <input type="hidden" name="token" value={token} />
      <label htmlFor="name">Your name</label>
      <input id="name" name="name" required maxLength={200} autoComplete="name" />
      <label htmlFor="password">
        Choose a password (12 characters or more), or give yours if this email has an account
      </label>
      <input id="password" name="password" type="password" required autoComplete="new-password" />
      <FormError error={state.error} />
      <button type="submit" disabled={pending}>
        Join
      </button>
    </form>
  );
}
