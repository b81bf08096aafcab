'use client';
import { useActionState } from 'react';
import { type SignInState, signIn, signInWithPasswordAction } from './actions';

/** R2: a person signs in with their email and password. */
export function PasswordSignInForm() {
  const [state, action, pending] = useActionState<SignInState, FormData>(signInWithPasswordAction, {
    error: null,
  });
  return (
    <form
      action={action}
      className="card stack"
      aria-describedby={state.error ? 'password-error' : undefined}
    >
      <label htmlFor="email">Email</label>
      <input id="email" name="email" type="email" autoComplete="username" required />
      <label htmlFor="password">Password</label>
      <input
        id="password"
        name="password"
        type="password"
        autoComplete="current-password"
        required
      />
      {state.error ? (
        <p id="password-error" role="alert" className="error">
          {state.error}
        </p>
      ) : null}
      <button type="submit" disabled={pending}>
        {pending ? 'Signing in…' : 'Sign in'}
      </button>
    </form>
  );
}

/** Integrators and automation: a workspace API key or an operator key. */
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
        {pending ? 'Signing in…' : 'Sign in with a key'}
      </button>
    </form>
  );
}
