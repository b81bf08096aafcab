import { currentSession } from '@quire/web/lib/session';
import { redirect } from 'next/navigation';
import { ChangePasswordForm } from './ChangePasswordForm';

export const metadata = { title: 'Your password · Quire' };
export const dynamic = 'force-dynamic';

/** R9: a signed-in person changes their own password (a key's session has none). */
export default async function ChangePasswordPage() {
  const session = await currentSession();
  if (session?.kind !== 'account') redirect('/signin');
  return (
    <main className="narrow">
      <h1>Your password</h1>
      <p className="muted">
        {session.email}: give your current password and choose a new one. Your other sessions are
        signed out, and a notice goes to your email.
      </p>
      <ChangePasswordForm />
    </main>
  );
}
