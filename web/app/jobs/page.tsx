import { listJobSummaries } from '../../../db/jobList';
import { pool } from '../../lib/server';
import { requirePrincipal } from '../../lib/session';

export const metadata = { title: 'Jobs · Quire' };
export const dynamic = 'force-dynamic';

function age(from: Date): string {
  const seconds = Math.max(0, Math.round((Date.now() - from.getTime()) / 1000));
  if (seconds < 60) return `${seconds} s ago`;
  if (seconds < 3600) return `${Math.round(seconds / 60)} min ago`;
  if (seconds < 86_400) return `${Math.round(seconds / 3600)} h ago`;
  return `${Math.round(seconds / 86_400)} d ago`;
}

export default async function JobsPage() {
  const principal = await requirePrincipal();
  const jobs = await listJobSummaries(pool(), principal.workspaceId, { limit: 50 });
  return (
    <main>
      <h1>Transcription jobs</h1>
      {jobs.length === 0 ? (
        <section className="empty card" aria-live="polite">
          <h2>No transcription jobs yet</h2>
          <p className="muted">
            Jobs appear here when pages are uploaded or a job is started through the API or the Temporal client.
          </p>
        </section>
      ) : (
        <div className="table-wrap">
          <table>
            <caption className="sr-only">Most recent transcription jobs</caption>
            <thead>
              <tr>
                <th scope="col">Job</th>
                <th scope="col">Status</th>
                <th scope="col">Page</th>
                <th scope="col">Attempt</th>
                <th scope="col">Segments (done / failed / total)</th>
                <th scope="col">Provider</th>
                <th scope="col">Age</th>
              </tr>
            </thead>
            <tbody>
              {jobs.map((job) => (
                <tr key={job.id} data-job-id={job.id}>
                  <td>
                    <code>{job.id.slice(0, 13)}…</code>
                  </td>
                  <td>
                    <span className={`status status-${job.status}`}>{job.status}</span>
                    {job.errorCategory ? <span className="muted"> ({job.errorCategory})</span> : null}
                  </td>
                  <td>{job.pageId}</td>
                  <td>{job.attemptNumber}</td>
                  <td>
                    {job.completedSegments} / {job.failedSegments} / {job.totalSegments ?? '–'}
                  </td>
                  <td>{job.provider}</td>
                  <td>
                    <time dateTime={job.createdAt.toISOString()} title={job.createdAt.toISOString()}>
                      {age(job.createdAt)}
                    </time>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </main>
  );
}
