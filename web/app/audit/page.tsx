import { listMembers } from '@quire/db/accounts';
import { AUDIT_ACTIONS, type AuditFilter, listAudit } from '@quire/db/auditLog';
import { listApiKeys } from '@quire/db/workspaces';
import { AuditTable } from '@quire/web/components/AuditTable';
import { queryValue } from '@quire/web/lib/archiveForms';
import { auditFilterOf } from '@quire/web/lib/auditFilter';
import { pool } from '@quire/web/lib/server';
import { requirePrincipal } from '@quire/web/lib/session';

export const metadata = { title: 'Audit log · Quire' };
export const dynamic = 'force-dynamic';

type Query = Record<string, string | string[] | undefined>;

/** R10: the filter the form sent (web/lib/auditFilter.ts); a value of no known shape narrows nothing. */
const filterOf = (query: Query): AuditFilter =>
  auditFilterOf({
    person: queryValue(query.person),
    action: queryValue(query.action),
    from: queryValue(query.from),
    to: queryValue(query.to),
  });

/**
 * M4, R10: this workspace's audit rows, each with the person (or key) who acted, by name;
 * narrowed to one person, one action and a span of days.
 */
export default async function AuditPage({ searchParams }: { searchParams: Promise<Query> }) {
  const principal = await requirePrincipal();
  const query = await searchParams;
  const filter = filterOf(query);
  const [{ entries }, members, keys] = await Promise.all([
    listAudit(pool(), { workspaceId: principal.workspaceId, limit: 100, ...filter }),
    listMembers(pool(), principal.workspaceId),
    listApiKeys(pool(), principal.workspaceId),
  ]);
  const person = filter.actor ? `${filter.actor.kind}:${filter.actor.id}` : '';
  const filtered = person || filter.action || filter.from || filter.to;
  return (
    <main>
      <div className="page-head">
        <div>
          <h1>Audit log</h1>
          <p className="muted">
            Every change in this workspace with the person or key that made it: uploads, jobs
            started, canceled and re-run, edits and verifications, publications, deletes, webhooks,
            members and keys, and the limits operators set on it.
          </p>
        </div>
      </div>
      <form className="filters" method="get" action="/audit" aria-label="Filter the audit log">
        <div className="field">
          <label htmlFor="audit-person">Person</label>
          <select id="audit-person" name="person" defaultValue={person}>
            <option value="">Anyone</option>
            {members.map((m) => (
              <option key={`a${m.accountId}`} value={`account:${m.accountId}`}>
                {m.name || m.email}
              </option>
            ))}
            {keys.map((k) => (
              <option key={`k${k.id}`} value={`apiKey:${k.id}`}>
                {k.name ?? `key ${k.prefix}`} (API key)
              </option>
            ))}
          </select>
        </div>
        <div className="field">
          <label htmlFor="audit-action">Action</label>
          <select id="audit-action" name="action" defaultValue={filter.action ?? ''}>
            <option value="">Any action</option>
            {AUDIT_ACTIONS.map((a) => (
              <option key={a} value={a}>
                {a}
              </option>
            ))}
          </select>
        </div>
        <div className="field">
          <label htmlFor="audit-from">From</label>
          <input
            id="audit-from"
            name="from"
            type="date"
            defaultValue={queryValue(query.from) ?? ''}
          />
        </div>
        <div className="field">
          <label htmlFor="audit-to">To</label>
          <input id="audit-to" name="to" type="date" defaultValue={queryValue(query.to) ?? ''} />
        </div>
        <div className="field-actions">
          <button type="submit">Filter</button>
        </div>
      </form>
      {filtered && entries.length === 0 ? (
        <p className="muted">Nothing recorded matches this filter.</p>
      ) : (
        <AuditTable entries={entries} caption="This workspace's audit log" />
      )}
    </main>
  );
}
