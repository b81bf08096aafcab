import type { JobSummary } from '@quire/db/jobList';
import Link from 'next/link';
import { shortId } from './format';
import { Status } from './Status';
import { Time } from './Time';

/** Segments as "done / failed / total" with a small bar; unknown totals read "–". */
export function SegmentCounts({
  completed,
  failed,
  total,
}: {
  completed: number;
  failed: number;
  total: number | null;
}) {
  const pct = total ? Math.round(((completed + failed) / total) * 100) : 0;
  return (
    <span className="counts">
      <span>
        {completed} / {failed} / {total ?? '–'}
      </span>
      {total ? (
        // An SVG bar: its widths are attributes, not inline styles, which the
        // Content-Security-Policy (R6) refuses.
        <svg className="meter" aria-hidden="true" viewBox="0 0 100 1" preserveAspectRatio="none">
          <rect className="meter-ok" x="0" y="0" height="1" width={(completed / total) * 100} />
          <rect
            className="meter-bad"
            x={(completed / total) * 100}
            y="0"
            height="1"
            width={(failed / total) * 100}
          />
        </svg>
      ) : null}
      <span className="sr-only">{total ? `${pct}% processed` : 'total not known yet'}</span>
    </span>
  );
}

/** Job summaries (L1) as a table; on narrow screens each row stacks as a card. */
export function JobsTable({ jobs, caption }: { jobs: JobSummary[]; caption: string }) {
  return (
    <div className="table-wrap">
      <table className="jobs">
        <caption className="sr-only">{caption}</caption>
        <thead>
          <tr>
            <th scope="col">Job</th>
            <th scope="col">Status</th>
            <th scope="col">Page</th>
            <th scope="col">Attempt</th>
            <th scope="col">
              Segments <span className="muted small">done / failed / total</span>
            </th>
            <th scope="col">Provider</th>
            <th scope="col">Age</th>
          </tr>
        </thead>
        <tbody>
          {jobs.map((job) => (
            <tr key={job.id} data-job-id={job.id} data-status={job.status}>
              <td data-label="Job">
                <Link href={`/jobs/${job.id}`} className="mono">
                  {shortId(job.id)}
                </Link>
              </td>
              <td data-label="Status">
                <Status
                  value={job.status}
                  detail={job.errorCategory ?? (job.stage === 'paused' ? 'paused' : null)}
                />
              </td>
              <td data-label="Page">
                <Link href={`/pages/${job.pageId}`}>Page {job.pageId}</Link>
              </td>
              <td data-label="Attempt">{job.attemptNumber}</td>
              <td data-label="Segments">
                <SegmentCounts
                  completed={job.completedSegments}
                  failed={job.failedSegments}
                  total={job.totalSegments}
                />
              </td>
              <td data-label="Provider">{job.provider}</td>
              <td data-label="Age">
                <Time date={job.createdAt} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
