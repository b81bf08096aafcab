import { blobUsage } from '@quire/db/blobs';
import { operationsFigures } from '@quire/db/console';
import { getProviderStates } from '@quire/db/providerState';
import { formatBytes, formatDuration, shortId } from '@quire/web/components/format';
import { LiveRefresh } from '@quire/web/components/LiveRefresh';
import { Time } from '@quire/web/components/Time';
import { liveJobsBaseline } from '@quire/web/lib/consoleLive';
import { pool } from '@quire/web/lib/server';
import { requirePrincipal } from '@quire/web/lib/session';
import Link from 'next/link';
import type { ReactNode } from 'react';

export const metadata = { title: 'Operations · Quire' };
export const dynamic = 'force-dynamic';

function Tile({
  label,
  value,
  detail,
  href,
  linkText,
  tone = 'neutral',
}: {
  label: string;
  value: ReactNode;
  detail?: ReactNode;
  href: string;
  linkText: string;
  tone?: 'neutral' | 'warn' | 'bad';
}) {
  return (
    <li className={`tile tile-${tone}`}>
      <h2 className="tile-label">{label}</h2>
      <p className="tile-value">{value}</p>
      {detail ? <p className="muted small">{detail}</p> : null}
      <Link href={href}>{linkText}</Link>
    </li>
  );
}

export default async function OperationsPage() {
  const principal = await requirePrincipal();
  const now = new Date();
  const digest = await liveJobsBaseline(principal.workspaceId);
  const [ops, providers, blobs] = await Promise.all([
    operationsFigures(pool(), principal.workspaceId),
    getProviderStates(pool(), principal.workspaceId),
    blobUsage(pool(), now),
  ]);
  const paused = providers.filter((p) => p.status === 'paused');
  const queueAgeMs = ops.oldestPending ? now.getTime() - ops.oldestPending.createdAt.getTime() : 0;
  const workspaceBytes =
    blobs.workspaces.find((w) => w.workspaceId === principal.workspaceId)?.bytes ?? 0;
  return (
    <main>
      <div className="page-head">
        <div>
          <h1>Operations</h1>
          <p className="muted">
            What needs attention now. The runbook is in the README; every job's history is in the
            Temporal UI.
          </p>
        </div>
        <div className="page-head-actions">
          <LiveRefresh topics={['jobs', 'providers']} baselines={{ jobs: digest }} />
        </div>
      </div>
      <ul className="tiles">
        <Tile
          label="Queue age"
          value={ops.oldestPending ? formatDuration(queueAgeMs) : 'empty'}
          detail={`${ops.pendingJobs} job(s) waiting`}
          href="/jobs?status=pending"
          linkText="Pending jobs"
          tone={queueAgeMs > 10 * 60_000 ? 'bad' : queueAgeMs > 60_000 ? 'warn' : 'neutral'}
        />
        <Tile
          label="Oldest pending job"
          value={
            ops.oldestPending ? (
              <span className="mono">{shortId(ops.oldestPending.jobId)}</span>
            ) : (
              'none'
            )
          }
          detail={
            ops.oldestPending ? (
              <>
                page {ops.oldestPending.pageId}, created <Time date={ops.oldestPending.createdAt} />
                {ops.oldestPending.stage === 'paused' ? ', waiting for its provider' : ''}
              </>
            ) : undefined
          }
          href={ops.oldestPending ? `/jobs/${ops.oldestPending.jobId}` : '/jobs?status=pending'}
          linkText={ops.oldestPending ? 'Open the job' : 'Pending jobs'}
        />
        <Tile
          label="Running attempts"
          value={ops.runningAttempts}
          detail={`${ops.runningJobs} job(s) running`}
          href="/jobs?status=running"
          linkText="Running jobs"
        />
        <Tile
          label="Paused providers"
          value={paused.length}
          detail={
            paused.length > 0
              ? paused.map((p) => `${p.provider} (${p.reason})`).join(', ')
              : 'all queues open'
          }
          href="/providers"
          linkText="Providers"
          tone={paused.length > 0 ? 'bad' : 'neutral'}
        />
        <Tile
          label="Failed jobs today"
          value={ops.failedJobsToday}
          href="/jobs?status=failed"
          linkText="Failed jobs"
          tone={ops.failedJobsToday > 0 ? 'warn' : 'neutral'}
        />
        <Tile
          label="Failed deliveries"
          value={ops.failedDeliveries}
          detail={`${ops.pendingDeliveries} pending`}
          href="/webhooks"
          linkText="Webhooks and delivery logs"
          tone={ops.failedDeliveries > 0 ? 'bad' : 'neutral'}
        />
        <Tile
          label="Blob cleanups"
          value={`${blobs.failedCleanups} failing`}
          detail={
            <>
              {blobs.pendingCleanups} pending
              {blobs.oldestPendingCleanupAgeMs !== null
                ? `, oldest ${formatDuration(blobs.oldestPendingCleanupAgeMs)}`
                : ''}{' '}
              · {formatBytes(workspaceBytes)} stored by this workspace
            </>
          }
          href="/batches"
          linkText="Batches"
          tone={blobs.failedCleanups > 0 ? 'bad' : 'neutral'}
        />
      </ul>
    </main>
  );
}
