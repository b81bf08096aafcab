import { listAudit } from '@quire/db/auditLog';
import { AuditTable } from '@quire/web/components/AuditTable';
import { pool } from '@quire/web/lib/server';
import { requirePrincipal } from '@quire/web/lib/session';

export const metadata = { title: 'Audit log · Quire' };
export const dynamic = 'force-dynamic';

/** M4: this workspace's audit rows: its cancels, re-runs and resumes, and operators' changes to it. */
export default async function AuditPage() {
  const principal = await requirePrincipal();
  const { entries } = await listAudit(pool(), { workspaceId: principal.workspaceId, limit: 100 });
  return (
    <main>
      <div className="page-head">
        <div>
          <h1>Audit log</h1>
          <p className="muted">
            Cancels, re-runs and resumes in this workspace, and the limits operators set on it.
          </p>
        </div>
      </div>
      <AuditTable entries={entries} caption="This workspace's audit log" />
    </main>
  );
}
