import { KNOWN_PROVIDERS } from '@quire/core/providerCatalogue';
import { listAudit } from '@quire/db/auditLog';
import { blobUsage } from '@quire/db/blobs';
import { operationsFigures } from '@quire/db/console';
import { installationOverview, providerSpendToday } from '@quire/db/operatorControls';
import { getProviderStates } from '@quire/db/providerState';
import { AuditTable } from '@quire/web/components/AuditTable';
import { formatBytes, formatDuration, formatMicros } from '@quire/web/components/format';
import {
  InstallationControlsForm,
  OperatorResumeButton,
  WorkspaceControlsForm,
} from '@quire/web/components/OperatorForms';
import { Time } from '@quire/web/components/Time';
import { config, pool } from '@quire/web/lib/server';
import { requireOperator } from '@quire/web/lib/session';
import Link from 'next/link';

export const metadata = { title: 'Operator · Quire' };
export const dynamic = 'force-dynamic';

/**
 * M1/M4: the operator view. Installation state (global budget and quota, provider pauses,
 * figures across workspaces), each workspace's controls, and the audit log. Only an operator
 * session reaches it; a workspace session gets not-found.
 */
export default async function OperatorPage() {
  await requireOperator();
  const now = new Date();
  const [overview, queue, usage, states, spend, audit] = await Promise.all([
    installationOverview(pool(), now, config().QUIRE_GLOBAL_QUOTA_BYTES ?? null),
    operationsFigures(pool(), null),
    blobUsage(pool(), now),
    getProviderStates(pool()),
    providerSpendToday(pool(), now),
    listAudit(pool(), { workspaceId: null, limit: 50 }),
  ]);
  const names = [...new Set([...KNOWN_PROVIDERS, ...states.map((s) => s.provider)])].sort();
  const queueAgeMs = queue.oldestPending
    ? now.getTime() - queue.oldestPending.createdAt.getTime()
    : 0;
  return (
    <main>
      <div className="page-head">
        <div>
          <h1>Operator</h1>
          <p className="muted">
            The installation: what every workspace shares, and the limits set on each. Every change
            here is in the audit log below.
          </p>
          <p>
            <Link href="/operator/accounts">Accounts</Link>: the people of the installation, to
            disable or enable.
          </p>
        </div>
      </div>

      <section aria-labelledby="installation-heading">
        <h2 id="installation-heading">Installation</h2>
        <ul className="tiles">
          <li className="tile">
            <h3 className="tile-label">Spend today (UTC {overview.day})</h3>
            <p className="tile-value" data-testid="global-spend">
              {formatMicros(overview.spentTodayMicros)}
            </p>
            <p className="muted small">
              {overview.controls.dailyBudgetMicros !== null
                ? `of ${formatMicros(overview.controls.dailyBudgetMicros)}`
                : 'no global budget'}
            </p>
          </li>
          <li className="tile">
            <h3 className="tile-label">Stored</h3>
            <p className="tile-value">{formatBytes(overview.storedBytes)}</p>
            <p className="muted small">
              {overview.effectiveQuotaBytes !== null
                ? `of ${formatBytes(overview.effectiveQuotaBytes)}`
                : 'no global quota'}
              {` · ${usage.pendingCleanups} cleanups pending, ${usage.failedCleanups} failing`}
            </p>
          </li>
          <li className="tile">
            <h3 className="tile-label">Queue</h3>
            <p className="tile-value">
              {queue.oldestPending ? formatDuration(queueAgeMs) : 'empty'}
            </p>
            <p className="muted small">
              {queue.pendingJobs} pending, {queue.runningJobs} running, {queue.failedJobsToday}{' '}
              failed today, {queue.failedDeliveries} failed deliveries
            </p>
          </li>
        </ul>
        <InstallationControlsForm controls={overview.controls} />
      </section>

      <section aria-labelledby="providers-heading">
        <h2 id="providers-heading">Providers</h2>
        <div className="table-wrap">
          <table>
            <caption className="sr-only">Provider queues and spend across workspaces</caption>
            <thead>
              <tr>
                <th scope="col">Provider</th>
                <th scope="col">State</th>
                <th scope="col">Since</th>
                <th scope="col">Spend today</th>
                <th scope="col">
                  <span className="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {names.map((name) => {
                const s = states.find((x) => x.provider === name);
                const paused = s?.status === 'paused';
                return (
                  <tr key={name} data-provider={name} data-state={s?.status ?? 'active'}>
                    <td data-label="Provider">
                      <strong>{name}</strong>
                    </td>
                    <td data-label="State">
                      <span className={`badge badge-${paused ? 'paused' : 'active'}`}>
                        {paused ? `paused (${s?.reason})` : 'active'}
                      </span>
                    </td>
                    <td data-label="Since">
                      {paused ? <Time date={s?.paused_at} /> : <span className="muted">–</span>}
                    </td>
                    <td data-label="Spend today">
                      {formatMicros(spend.find((p) => p.provider === name)?.spentMicros ?? 0)}
                    </td>
                    <td data-label="Actions">
                      {paused ? <OperatorResumeButton provider={name} /> : null}
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      </section>

      <section aria-labelledby="workspaces-heading">
        <h2 id="workspaces-heading">Workspaces</h2>
        <div className="table-wrap">
          <table>
            <caption className="sr-only">Workspaces with their share and limits</caption>
            <thead>
              <tr>
                <th scope="col">Workspace</th>
                <th scope="col">Spend today</th>
                <th scope="col">Stored</th>
                <th scope="col">Running</th>
                <th scope="col">Waiting for a slot</th>
              </tr>
            </thead>
            <tbody>
              {overview.workspaces.map((w) => (
                <tr key={w.id} data-workspace={w.id}>
                  <td data-label="Workspace">
                    {w.id} · {w.name}
                  </td>
                  <td data-label="Spend today">
                    {formatMicros(w.spentTodayMicros)}
                    {w.controls.dailyBudgetMicros !== null
                      ? ` of ${formatMicros(w.controls.dailyBudgetMicros)}`
                      : ''}
                  </td>
                  <td data-label="Stored">
                    {formatBytes(w.storedBytes)}
                    {w.controls.quotaBytes !== null
                      ? ` of ${formatBytes(w.controls.quotaBytes)}`
                      : ''}
                  </td>
                  <td data-label="Running">
                    {w.activeJobs}
                    {w.controls.activeJobCap !== null ? ` of ${w.controls.activeJobCap}` : ''}
                  </td>
                  <td data-label="Waiting for a slot" data-testid={`waiting-${w.id}`}>
                    {w.waitingJobs}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
        <div className="grid">
          {overview.workspaces.map((w) => (
            <div className="card" key={w.id}>
              <h3>
                Workspace {w.id} · {w.name}
              </h3>
              <WorkspaceControlsForm
                workspaceId={w.id}
                name={w.name}
                controls={w.controls}
                providers={KNOWN_PROVIDERS}
              />
            </div>
          ))}
        </div>
      </section>

      <section aria-labelledby="audit-heading">
        <h2 id="audit-heading">Audit log</h2>
        <AuditTable entries={audit.entries} caption="The latest actions on the installation" />
      </section>
    </main>
  );
}
