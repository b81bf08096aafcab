import type { AccountListing } from '@quire/db/accounts';
import { AccountDisabledButton } from '@quire/web/components/OperatorForms';
import { Time } from '@quire/web/components/Time';
import { queryValue } from '@quire/web/lib/archiveForms';
import { refusalOf } from '@quire/web/lib/errors';
import { requireOperator } from '@quire/web/lib/session';
import { listInstallationAccounts, MAX_ACCOUNT_SEARCH_CHARS } from '@quire/web/services/people';
import Link from 'next/link';

export const metadata = { title: 'Accounts · Operator · Quire' };
export const dynamic = 'force-dynamic';

/**
 * R3: the installation's accounts for operators (email, name, status, workspaces), searched by
 * email or name and paged by id, each with Disable or Enable. Disabling ends every session of
 * the account at once; the change is in the audit log with the operator as actor.
 */
export default async function OperatorAccountsPage({
  searchParams,
}: {
  searchParams: Promise<Record<string, string | string[] | undefined>>;
}) {
  const operator = await requireOperator();
  const query = await searchParams;
  const q = queryValue(query.q)?.trim() ?? '';
  const rawAfter = queryValue(query.after) ?? '';
  const afterId = /^[1-9]\d{0,14}$/.test(rawAfter) ? Number(rawAfter) : undefined;
  let accounts: AccountListing[] = [];
  let nextAfterId: number | null = null;
  let problem: string | undefined;
  try {
    ({ accounts, nextAfterId } = await listInstallationAccounts(operator, { search: q, afterId }));
  } catch (error) {
    problem = refusalOf(error).message;
  }
  const self = 'accountId' in operator ? operator.accountId : null;
  const pageHref = (after?: number) => {
    const params = new URLSearchParams();
    if (q) params.set('q', q);
    if (after) params.set('after', String(after));
    const text = params.toString();
    return `/operator/accounts${text ? `?${text}` : ''}`;
  };
  return (
    <main>
      <div className="page-head">
        <div>
          <p className="muted small">
            <Link href="/operator">Operator</Link> / Accounts
          </p>
          <h1>Accounts</h1>
          <p className="muted">
            Every account of the installation. Disabling one ends all its sessions at once, on every
            replica, and refuses its sign-in until it is enabled again. Each change is in the audit
            log.
          </p>
        </div>
      </div>
      <form method="get" className="filters card" aria-label="Search accounts">
        <div className="field">
          <label htmlFor="accounts-q">Email or name</label>
          <input
            id="accounts-q"
            name="q"
            type="search"
            defaultValue={q}
            maxLength={MAX_ACCOUNT_SEARCH_CHARS}
          />
        </div>
        <div className="field-actions">
          <button type="submit">Search</button>
        </div>
      </form>
      {problem ? (
        <p role="alert" className="error">
          {problem}
        </p>
      ) : accounts.length === 0 ? (
        <p className="muted">{q ? `No account matches “${q}”.` : 'No accounts yet.'}</p>
      ) : (
        <div className="table-wrap">
          <table>
            <caption className="sr-only">Accounts of the installation</caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Email</th>
                <th scope="col">Status</th>
                <th scope="col">Workspaces</th>
                <th scope="col">
                  <span className="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {accounts.map((a) => (
                <tr
                  key={a.id}
                  data-account={a.email}
                  data-state={a.disabledAt ? 'disabled' : 'active'}
                >
                  <td data-label="Name">
                    <strong>{a.name}</strong>
                    {a.id === self ? <span className="muted"> (you)</span> : null}
                  </td>
                  <td data-label="Email">{a.email}</td>
                  <td data-label="Status">
                    <span className={`badge badge-${a.disabledAt ? 'failed' : 'active'}`}>
                      {a.disabledAt ? 'disabled' : 'active'}
                    </span>
                    {a.operator ? <span className="badge badge-detail">operator</span> : null}
                    {a.disabledAt ? (
                      <span className="muted small">
                        {' '}
                        <Time date={a.disabledAt} />
                      </span>
                    ) : null}
                  </td>
                  <td data-label="Workspaces">
                    {a.workspaces.length === 0 ? (
                      <span className="muted">none</span>
                    ) : (
                      a.workspaces.map((w) => `${w.workspaceId} · ${w.name} (${w.role})`).join(', ')
                    )}
                  </td>
                  <td data-label="Actions">
                    {a.id === self ? null : (
                      <AccountDisabledButton
                        accountId={a.id}
                        email={a.email}
                        disabled={a.disabledAt !== null}
                      />
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {afterId || nextAfterId ? (
        <nav className="pager" aria-label="Pages of accounts">
          {afterId ? <Link href={pageHref()}>First page</Link> : null}
          {nextAfterId ? <Link href={pageHref(nextAfterId)}>Next page</Link> : null}
        </nav>
      ) : null}
    </main>
  );
}
