import { config } from '@quire/web/lib/server';

/**
 * R9: in the development stack (`npm start` sets QUIRE_DEV_MAIL_URL), where the mail Quire
 * sends lands: the sink's own mailbox page. Nothing in an installation.
 */
export function DevMailLink() {
  const url = config().QUIRE_DEV_MAIL_URL;
  if (!url) return null;
  return (
    <p className="muted small" data-dev-mail>
      Development: mail Quire sends (invitations, reset links, notices) lands in the mail sink at{' '}
      <a href={url}>{url}</a>.
    </p>
  );
}
