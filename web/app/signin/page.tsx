import { ERROR_CODES, isErrorCode } from '@quire/core/errorCodes';
import { DevMailLink } from '@quire/web/components/DevMailLink';
import { config } from '@quire/web/lib/server';
import { PasswordSignInForm, SignInForm } from './SignInForm';

export const metadata = { title: 'Sign in · Quire' };
export const dynamic = 'force-dynamic';

export default async function SignInPage({
  searchParams,
}: {
  searchParams: Promise<{ error?: string; changed?: string }>;
}) {
  const { error, changed } = await searchParams;
  const settings = config();
  return (
    <main className="narrow">
      <h1>Sign in to Quire</h1>
      {error === 'oidc' ? (
        <p role="alert" className="error" data-code="oidc">
          Single sign-on did not complete. Try again, or ask an owner to invite you.
        </p>
      ) : error?.startsWith('oidc_') && isErrorCode(error) ? (
        // X2: why single sign-on refused, by its stable code.
        <p role="alert" className="error" data-code={error}>
          {ERROR_CODES[error].sentence}
        </p>
      ) : null}
      {settings.QUIRE_OIDC_ISSUER ? (
        <p>
          <a className="button" href="/signin/oidc">
            Sign in with {settings.QUIRE_OIDC_NAME}
          </a>
        </p>
      ) : null}
      {changed === '1' ? (
        <p role="status" className="card" data-changed>
          Your password was changed and every session of your account was signed out. Sign in with
          the new one.
        </p>
      ) : null}
      <PasswordSignInForm />
      <p>
        <a href="/signin/forgot">Forgot your password?</a>
      </p>
      <DevMailLink />
      <section className="stack" aria-labelledby="key-signin">
        <h2 id="key-signin">Or with a key</h2>
        <p className="muted">
          A workspace API key (<code>npm start</code> prints one for the development workspace) or
          an operator key (<code>quire admin create-operator-key</code>).
        </p>
        <SignInForm />
      </section>
    </main>
  );
}
