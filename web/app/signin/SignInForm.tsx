'use client';
import { useActionState } from 'react';
import { type SignInState, signIn } from './actions';

export function SignInForm() {
  const [state, action, pending] = useActionState<SignInState, FormData>(signIn, { error: null });
  return (
    <form
      action={action}
      className="card stack"
      aria-describedby={state.error ? 'signin-error' : undefined}
    >
      <label htmlFor="apiKey">Workspace API key or operator key</label>
      <input
        id="apiKey"
        name="apiKey"
        type="password"
        autoComplete="off"
        required
        placeholder="qk_… or qo_…"
      />
      {state.error ? (
        <p id="signin-error" role="alert" className="error">
          {state.error}
        </p>
      ) : null}
      <button type="submit" disabled={pending}>
        {pending ? 'Signing in…' : 'Sign in'}
      </button>
    </form>
  );
}
