import { decodePageToken, encodePageToken, PageTokenError } from '@quire/core/pageToken';
import { JOB_STATUSES, type JobStatus } from '@quire/core/temporal';
import { listJobSummaries } from '@quire/db/jobList';
import { JobsTable } from '@quire/web/components/JobsTable';
import { LiveRefresh } from '@quire/web/components/LiveRefresh';
import { liveJobsBaseline } from '@quire/web/lib/consoleLive';
import { config, pool } from '@quire/web/lib/server';
import { requirePrincipal } from '@quire/web/lib/session';
import Link from 'next/link';

export const metadata = { title: 'Jobs · Quire' };
export const dynamic = 'force-dynamic';

const PAGE_SIZE = 25;

type Search = { status?: string; batch?: string; pageToken?: string };

function one(value: string | string[] | undefined): string | undefined {
  const v = Array.isArray(value) ? value[0] : value;
  return v && v.trim() !== '' ? v.trim() : undefined;
}

export default async function JobsPage({
  searchParams,
}: {
  searchParams: Promise<Record<string, string | string[] | undefined>>;
}) {
  const principal = await requirePrincipal();
  const raw = await searchParams;
  const search: Search = {
    status: one(raw.status),
    batch: one(raw.batch),
    pageToken: one(raw.pageToken),
  };
  const status = JOB_STATUSES.includes(search.status as JobStatus)
    ? (search.status as JobStatus)
    : undefined;
  const batchId = search.batch && search.batch.length <= 100 ? search.batch : undefined;
  // The API's own token binding (L1), so a console link and an API call page alike.
  const binding = {
    workspaceId: principal.workspaceId,
    scope: 'transcription-jobs',
    filter: { status, pageId: undefined, batchId },
  };
  const secret = config().QUIRE_SECRET_KEY;
  let beforeId: string | undefined;
  let tokenError = false;
  if (search.pageToken) {
    try {
      const cursor = decodePageToken(secret, binding, search.pageToken);
      if (typeof cursor === 'string') beforeId = cursor;
      else tokenError = true;
    } catch (error) {
      if (!(error instanceof PageTokenError)) throw error;
      tokenError = true;
    }
  }
  const digest = await liveJobsBaseline(principal.workspaceId);
  const rows = await listJobSummaries(pool(), principal.workspaceId, {
    status,
    batchId,
    beforeId,
    limit: PAGE_SIZE + 1,
  });
  const jobs = rows.slice(0, PAGE_SIZE);
  const last = jobs[jobs.length - 1];
  const next = rows.length > PAGE_SIZE && last ? encodePageToken(secret, binding, last.id) : null;
  const filterQuery = (extra: Record<string, string>) => {
    const q = new URLSearchParams();
    if (status) q.set('status', status);
    if (batchId) q.set('batch', batchId);
    for (const [k, v] of Object.entries(extra)) q.set(k, v);
    const s = q.toString();
    return s ? `/jobs?${s}` : '/jobs';
  };
  const filtered = Boolean(status || batchId);

  return (
    <main>
      <div className="page-head">
        <div>
          <h1>Transcription jobs</h1>
          <p className="muted">Newest first. Rows change as the workers report progress.</p>
        </div>
        <div className="page-head-actions">
          <LiveRefresh
            workspaceId={principal.workspaceId}
            eventTypes={['dev.quire.transcription.']}
            topics={['jobs']}
            baselines={{ jobs: digest }}
          />
          <Link className="button" href="/upload">
            Upload files
          </Link>
        </div>
      </div>

      <form className="filters" method="get" action="/jobs" aria-label="Filter jobs">
        <div className="field">
          <label htmlFor="status">Status</label>
          <select id="status" name="status" defaultValue={status ?? ''}>
            <option value="">Any status</option>
            {JOB_STATUSES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </div>
        <div className="field">
          <label htmlFor="batch">Batch</label>
          <input
            id="batch"
            name="batch"
            defaultValue={batchId ?? ''}
            placeholder="Batch id"
            spellCheck={false}
          />
        </div>
        <div className="field-actions">
          <button type="submit">Apply</button>
          {filtered ? (
            <Link href="/jobs" className="button secondary">
              Clear
            </Link>
          ) : null}
        </div>
      </form>

      {tokenError ? (
        <p role="alert" className="notice notice-error">
          That page link is not valid for these filters.{' '}
          <Link href={filterQuery({})}>Start from the newest jobs</Link>.
        </p>
      ) : null}

      {jobs.length === 0 && !tokenError ? (
        <section className="empty card">
          <h2>{filtered ? 'No jobs match these filters' : 'No transcription jobs yet'}</h2>
          <p className="muted">
            {filtered ? (
              <>
                Try another status, or <Link href="/jobs">show every job</Link>.
              </>
            ) : (
              <>
                Jobs appear here when pages are uploaded (<Link href="/upload">upload files</Link>)
                or started through the API or the Temporal client.
              </>
            )}
          </p>
        </section>
      ) : jobs.length > 0 ? (
        <JobsTable
          jobs={jobs}
          caption={filtered ? 'Jobs matching the filters' : 'Most recent transcription jobs'}
        />
      ) : null}

      <nav className="pager" aria-label="Job pages">
        {search.pageToken ? <Link href={filterQuery({})}>← Newest</Link> : <span />}
        {next ? (
          <Link href={filterQuery({ pageToken: next })} rel="next">
            Older jobs →
          </Link>
        ) : null}
      </nav>
    </main>
  );
}
