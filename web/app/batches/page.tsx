import { recentBatches } from '@quire/db/console';
import { shortId } from '@quire/web/components/format';
import { Time } from '@quire/web/components/Time';
import { pool } from '@quire/web/lib/server';
import { requirePrincipal } from '@quire/web/lib/session';
import Link from 'next/link';

export const metadata = { title: 'Batches · Quire' };
export const dynamic = 'force-dynamic';

export default async function BatchesPage() {
  const principal = await requirePrincipal();
  const batches = await recentBatches(pool(), principal.workspaceId, 50);
  return (
    <main>
      <div className="page-head">
        <div>
          <h1>Batches</h1>
          <p className="muted">
            Each upload is one batch; cancel a batch to stop all of its jobs at once.
          </p>
        </div>
        <Link className="button" href="/upload">
          Upload files
        </Link>
      </div>
      {batches.length === 0 ? (
        <section className="empty card">
          <h2>No batches yet</h2>
          <p className="muted">
            <Link href="/upload">Upload files</Link> to create one.
          </p>
        </section>
      ) : (
        <div className="table-wrap">
          <table>
            <caption className="sr-only">Most recent batches</caption>
            <thead>
              <tr>
                <th scope="col">Batch</th>
                <th scope="col">Created</th>
                <th scope="col">Jobs</th>
                <th scope="col">Active</th>
                <th scope="col">Completed</th>
                <th scope="col">Failed</th>
                <th scope="col">Canceled</th>
              </tr>
            </thead>
            <tbody>
              {batches.map((b) => (
                <tr key={b.id}>
                  <td data-label="Batch">
                    <Link href={`/batches/${b.id}`} className="mono">
                      {shortId(b.id)}
                    </Link>
                  </td>
                  <td data-label="Created">
                    <Time date={b.createdAt} />
                  </td>
                  <td data-label="Jobs">{b.jobs}</td>
                  <td data-label="Active">{b.active}</td>
                  <td data-label="Completed">{b.completed}</td>
                  <td data-label="Failed">{b.failed}</td>
                  <td data-label="Canceled">{b.canceled}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </main>
  );
}
