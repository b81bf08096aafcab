/**
 * R9: the pieces every form that sets a password shares (the reset link, changing one's own,
 * accepting an invitation): the new password asked twice, and the form's refusal.
 */
export function NewPasswordFields({
  label = 'New password (12 characters or more)',
}: {
  label?: string;
}) {
  return (
    <>
      <label htmlFor="password">{label}</label>
      <input id="password" name="password" type="password" required autoComplete="new-password" />
      <label htmlFor="confirm">The new password again</label>
      <input id="confirm" name="confirm" type="password" required autoComplete="new-password" />
    </>
  );
}

/** A form's refusal, said where the person is looking. */
export function FormError({ error }: { error: string | null }) {
  return error ? (
    <p role="alert" className="error">
      {error}
    </p>
  ) : null;
}
