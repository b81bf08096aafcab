import { permits } from '@quire/core/roles';
import { spendSummary } from '@quire/db/budget';
import { formatMicros } from '@quire/web/components/format';
import { ResumeButton } from '@quire/web/components/ResumeButton';
import { Time } from '@quire/web/components/Time';
import { pool } from '@quire/web/lib/server';
import { requirePrincipal } from '@quire/web/lib/session';
import { providerQueues } from '@quire/web/services/providers';

export const metadata = { title: 'Providers · Quire' };
export const dynamic = 'force-dynamic';

function Budget({ label, spent, budget }: { label: string; spent: number; budget: number | null }) {
  const pct = budget ? Math.min(100, Math.round((spent / budget) * 100)) : null;
  return (
    <div className="budget card">
      <h3>{label}</h3>
      <p className="figure">
        {formatMicros(spent)}{' '}
        <span className="muted small">
          {budget !== null ? `of ${formatMicros(budget)}` : 'no daily budget set'}
        </span>
      </p>
      {budget !== null ? (
        <meter
          min={0}
          max={budget}
          value={Math.min(spent, budget)}
          low={budget * 0.75}
          high={budget * 0.9}
          optimum={0}
          aria-label={`${label}: ${pct}% of the budget`}
        >
          {pct}%
        </meter>
      ) : null}
    </div>
  );
}

export default async function ProvidersPage() {
  const principal = await requirePrincipal();
  const [queues, spend] = await Promise.all([
    providerQueues(principal),
    spendSummary(pool(), principal.workspaceId, new Date()),
  ]);
  return (
    <main>
      <div className="page-head">
        <div>
          <h1>Providers</h1>
          <p className="muted">
            A provider that reports no credit or refused credentials pauses its queue until it is
            resumed: by an operator for the installation's shared credentials, here for this
            workspace's own. An outage or a spent budget resumes on its own. Paused jobs are not
            charged.
          </p>
        </div>
      </div>
      <section aria-labelledby="spend-heading">
        <h2 id="spend-heading">
          Spend today{' '}
          <span className="muted small">
            (UTC {spend.day}, resets <Time date={spend.resetsAt} />)
          </span>
        </h2>
        <div className="grid">
          <Budget
            label="This workspace"
            spent={spend.workspace.spentMicros}
            budget={spend.workspace.budgetMicros}
          />
        </div>
      </section>
      <section aria-labelledby="queues-heading">
        <h2 id="queues-heading">Queues</h2>
        <div className="table-wrap">
          <table>
            <caption className="sr-only">
              Provider queue state and this workspace's spend today
            </caption>
            <thead>
              <tr>
                <th scope="col">Provider</th>
                <th scope="col">State</th>
                <th scope="col">Reason</th>
                <th scope="col">Since</th>
                <th scope="col">Resumes</th>
                <th scope="col">Spend today</th>
                <th scope="col">Calls today</th>
                <th scope="col">
                  <span className="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {queues.map((s) => {
                const name = s.name;
                const p = spend.providers.find((x) => x.provider === name);
                const paused = s.status === 'paused';
                return (
                  <tr key={name} data-provider={name} data-state={s.status}>
                    <td data-label="Provider">
                      <strong>{name}</strong>
                    </td>
                    <td data-label="State">
                      <span className={`badge badge-${paused ? 'paused' : 'active'}`}>
                        {paused ? 'paused' : 'active'}
                      </span>
                    </td>
                    <td data-label="Reason">
                      {paused ? s.reason : <span className="muted">–</span>}
                    </td>
                    <td data-label="Since">
                      {paused ? <Time date={s.pausedAt} /> : <span className="muted">–</span>}
                    </td>
                    <td data-label="Resumes">
                      {paused ? (
                        s.resumeAt ? (
                          <Time date={s.resumeAt} />
                        ) : s.needsOperator ? (
                          "on an operator's Resume"
                        ) : (
                          'on Resume'
                        )
                      ) : (
                        <span className="muted">–</span>
                      )}
                    </td>
                    <td data-label="Spend today">{formatMicros(p?.spentMicros ?? 0)}</td>
                    <td data-label="Calls today">{p?.calls ?? 0}</td>
                    <td data-label="Actions">
                      {s.resumable && permits(principal.grant, 'provider.resume') ? (
                        <ResumeButton provider={name} />
                      ) : null}
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      </section>
    </main>
  );
}
