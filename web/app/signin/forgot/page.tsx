import { DevMailLink } from '@quire/web/components/DevMailLink';
import { ForgotForm } from './ForgotForm';

export const metadata = { title: 'Forgot your password · Quire' };
export const dynamic = 'force-dynamic';

/** R9: ask for a password reset link by email. */
export default function ForgotPasswordPage() {
  return (
    <main className="narrow">
      <h1>Forgot your password?</h1>
      <p className="muted">
        Give the email of your account: a link to set a new password goes to it.
      </p>
      <ForgotForm />
      <DevMailLink />
      <p>
        <a href="/signin">Back to sign in</a>
      </p>
    </main>
  );
}
