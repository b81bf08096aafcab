import { permits } from '@quire/core/roles';
import { listSubscriptions } from '@quire/db/webhooks';
import { DeleteWebhookButton } from '@quire/web/components/DeleteWebhookButton';
import { Time } from '@quire/web/components/Time';
import { WebhookForm } from '@quire/web/components/WebhookForm';
import { pool } from '@quire/web/lib/server';
import { requirePrincipal } from '@quire/web/lib/session';
import Link from 'next/link';

export const metadata = { title: 'Webhooks · Quire' };
export const dynamic = 'force-dynamic';

export default async function WebhooksPage() {
  const principal = await requirePrincipal();
  const subscriptions = await listSubscriptions(pool(), principal.workspaceId);
  return (
    <main>
      <div className="page-head">
        <div>
          <h1>Webhooks</h1>
          <p className="muted">
            Signed CloudEvents to your endpoints (X-Quire-Signature and Standard Webhooks headers),
            retried for up to three days. At most 100 per workspace.
          </p>
        </div>
      </div>
      <div className="columns">
        <section aria-labelledby="list-heading">
          <h2 id="list-heading">Subscriptions</h2>
          {subscriptions.length === 0 ? (
            <p className="empty card muted">
              No webhooks yet. Add one to receive events as they are committed.
            </p>
          ) : (
            <ul className="cards">
              {subscriptions.map((s) => (
                <li key={s.id} className="card" data-webhook={s.id}>
                  <p className="mono break">{s.url}</p>
                  <p className="muted small">
                    {s.eventTypes ? s.eventTypes.join(', ') : 'every event'} · created{' '}
                    <Time date={s.createdAt} />
                    {s.disabledAt ? (
                      <>
                        {' '}
                        ·{' '}
                        <span className="error">
                          disabled ({s.disabledReason ?? 'by the receiver'})
                        </span>
                      </>
                    ) : null}
                  </p>
                  <div className="actions">
                    <Link href={`/webhooks/${s.id}`} className="button secondary">
                      Delivery log
                    </Link>
                    {permits(principal.grant, 'webhook.delete') ? (
                      <DeleteWebhookButton webhookId={s.id} url={s.url} />
                    ) : null}
                  </div>
                </li>
              ))}
            </ul>
          )}
        </section>
        {permits(principal.grant, 'webhook.create') ? <WebhookForm /> : null}
      </div>
    </main>
  );
}
