import { KNOWN_PROVIDERS } from '@quire/core/providerCatalogue';
import { spendSummary } from '@quire/db/budget';
import { getProviderStates } from '@quire/db/providerState';
import { formatMicros } from '@quire/web/components/format';
import { ResumeButton } from '@quire/web/components/ResumeButton';
import { Time } from '@quire/web/components/Time';
import { pool } from '@quire/web/lib/server';
import { requirePrincipal } from '@quire/web/lib/session';

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
  const [states, spend] = await Promise.all([
    getProviderStates(pool()),
    spendSummary(pool(), principal.workspaceId, new Date()),
  ]);
  const names = [...new Set([...KNOWN_PROVIDERS, ...states.map((s) => s.provider)])].sort();
  return (
    <main>
      <div className="page-head">
        <div>
          <h1>Providers</h1>
          <p className="muted">
            A provider that reports no credit or refused credentials pauses its queue until an
            operator resumes it; an outage or a spent budget resumes on its own. Paused jobs are not
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
              {names.map((name) => {
                const s = states.find((x) => x.provider === name);
                const p = spend.providers.find((x) => x.provider === name);
                const paused = s?.status === 'paused';
                return (
                  <tr key={name} data-provider={name} data-state={s?.status ?? 'active'}>
                    <td data-label="Provider">
                      <strong>{name}</strong>
                    </td>
                    <td data-label="State">
                      <span className={`badge badge-${paused ? 'paused' : 'active'}`}>
                        {paused ? 'paused' : 'active'}
                      </span>
                    </td>
                    <td data-label="Reason">
                      {paused ? s?.reason : <span className="muted">–</span>}
                    </td>
                    <td data-label="Since">
                      {paused ? <Time date={s?.paused_at} /> : <span className="muted">–</span>}
                    </td>
                    <td data-label="Resumes">
                      {paused ? (
                        s?.resume_at ? (
                          <Time date={s.resume_at} />
                        ) : (
                          'on Resume'
                        )
                      ) : (
                        <span className="muted">–</span>
                      )}
                    </td>
                    <td data-label="Spend today">{formatMicros(p?.spentMicros ?? 0)}</td>
                    <td data-label="Calls today">{p?.calls ?? 0}</td>
                    <td data-label="Actions">{paused ? <ResumeButton provider={name} /> : null}</td>
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
