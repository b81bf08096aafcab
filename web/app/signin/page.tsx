import { SignInForm } from './SignInForm';

export const metadata = { title: 'Sign in · Quire' };

export default function SignInPage() {
  return (
    <main className="narrow">
      <h1>Sign in to Quire</h1>
      <p className="muted">
        Use the API key of your workspace. <code>npm start</code> prints one for the development
        workspace; an operator creates others with{' '}
        <code>quire admin create-workspace --name …</code>. An operator key (
        <code>quire admin create-operator-key</code>) opens the operator view of the installation.
      </p>
      <SignInForm />
    </main>
  );
}
