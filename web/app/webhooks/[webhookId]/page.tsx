import { permits } from '@quire/core/roles';
import { DELIVERY_STATUSES, isGivenUpDelivery } from '@quire/core/webhookStatus';
import { getSubscription, listDeliveries } from '@quire/db/webhooks';
import { DeleteWebhookButton } from '@quire/web/components/DeleteWebhookButton';
import { LiveRefresh } from '@quire/web/components/LiveRefresh';
import { ReplayButton } from '@quire/web/components/ReplayButton';
import { Status } from '@quire/web/components/Status';
import { Time } from '@quire/web/components/Time';
import { pool } from '@quire/web/lib/server';
import { requirePrincipal } from '@quire/web/lib/session';
import Link from 'next/link';
import { notFound } from 'next/navigation';

export const metadata = { title: 'Webhook deliveries · Quire' };
export const dynamic = 'force-dynamic';

export default async function WebhookPage({
  params,
  searchParams,
}: {
  params: Promise<{ webhookId: string }>;
  searchParams: Promise<Record<string, string | string[] | undefined>>;
}) {
  const principal = await requirePrincipal();
  const { webhookId } = await params;
  if (webhookId.length > 64) notFound();
  const subscription = await getSubscription(pool(), principal.workspaceId, webhookId);
  if (!subscription) notFound();
  const rawStatus = (await searchParams).status;
  const status = DELIVERY_STATUSES.find((s) => s === rawStatus);
  const deliveries = await listDeliveries(pool(), principal.workspaceId, webhookId, {
    limit: 100,
    status,
  });
  return (
    <main>
      <nav aria-label="Breadcrumb" className="crumbs">
        <Link href="/webhooks">Webhooks</Link> <span aria-hidden="true">/</span>{' '}
        <span>Deliveries</span>
      </nav>
      <div className="page-head">
        <div>
          <h1>Delivery log</h1>
          <p className="mono break">{subscription.url}</p>
        </div>
        <div className="page-head-actions">
          <LiveRefresh workspaceId={principal.workspaceId} />
          {permits(principal.grant, 'webhook.delete') ? (
            <DeleteWebhookButton webhookId={subscription.id} url={subscription.url} />
          ) : null}
        </div>
      </div>
      <nav aria-label="Filter deliveries" className="tabs">
        <Link href={`/webhooks/${webhookId}`} aria-current={!status ? 'page' : undefined}>
          All
        </Link>
        {DELIVERY_STATUSES.map((s) => (
          <Link
            key={s}
            href={`/webhooks/${webhookId}?status=${s}`}
            aria-current={status === s ? 'page' : undefined}
          >
            {s}
          </Link>
        ))}
      </nav>
      {deliveries.length === 0 ? (
        <p className="empty card muted">
          {status
            ? `No ${status} deliveries.`
            : 'No deliveries yet. Events committed after the webhook was created appear here.'}
        </p>
      ) : (
        <div className="table-wrap">
          <table className="deliveries">
            <caption className="sr-only">Deliveries, newest first</caption>
            <thead>
              <tr>
                <th scope="col">Event</th>
                <th scope="col">Status</th>
                <th scope="col">Attempts</th>
                <th scope="col">Last answer</th>
                <th scope="col">Next attempt</th>
                <th scope="col">Created</th>
                <th scope="col">
                  <span className="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {deliveries.map((d) => {
                const last = d.attempts[d.attempts.length - 1];
                return (
                  <tr key={d.id} data-delivery={d.id} data-status={d.status}>
                    <td data-label="Event">
                      <span className="mono small">{d.eventType.replace('dev.quire.', '')}</span>{' '}
                      <span className="muted small">#{d.eventId}</span>
                    </td>
                    <td data-label="Status">
                      <Status value={d.status} />
                    </td>
                    <td data-label="Attempts">
                      <details>
                        <summary>{d.attemptCount}</summary>
                        <ol className="attempt-log">
                          {d.attempts.map((a, i) => (
                            // biome-ignore lint/suspicious/noArrayIndexKey: attempts are an append-only log in order
                            <li key={i}>
                              <Time date={a.attemptedAt} />: {a.statusCode ?? 'no answer'}
                              {a.latencyMs !== null ? ` in ${a.latencyMs} ms` : ''}
                              {a.error ? <span className="error"> ({a.error})</span> : null}
                            </li>
                          ))}
                        </ol>
                      </details>
                    </td>
                    <td data-label="Last answer">
                      {last ? (
                        (last.statusCode ?? (
                          <span className="error">{last.error ?? 'no answer'}</span>
                        ))
                      ) : (
                        <span className="muted">–</span>
                      )}
                    </td>
                    <td data-label="Next attempt">
                      {d.nextAttemptAt ? (
                        <Time date={d.nextAttemptAt} />
                      ) : (
                        <span className="muted">–</span>
                      )}
                    </td>
                    <td data-label="Created">
                      <Time date={d.createdAt} />
                    </td>
                    <td data-label="Actions">
                      {isGivenUpDelivery(d.status) && permits(principal.grant, 'webhook.replay') ? (
                        <ReplayButton deliveryId={d.id} />
                      ) : null}
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
    </main>
  );
}
