import { ResetForm } from './ResetForm';

export const metadata = { title: 'Set a new password · Quire' };
export const dynamic = 'force-dynamic';

/**
 * R9: the page a password reset email links to. The link is judged when the form is sent
 * (used, expired or unknown: `reset_closed`), so opening it uses nothing up.
 */
export default async function ResetPage({ params }: { params: Promise<{ token: string }> }) {
  const { token } = await params;
  return (
    <main className="narrow">
      <h1>Set a new password</h1>
      <p className="muted">
        Every session of your account is signed out when the new password is set.
      </p>
      <ResetForm token={token} />
    </main>
  );
}
