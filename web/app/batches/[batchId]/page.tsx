import { permits } from '@quire/core/roles';
import { isActiveStatus, type JobStatus } from '@quire/core/temporal';
import { getBatchCreatedAt } from '@quire/db/console';
import { loadBatchResult } from '@quire/db/ingest';
import { getItem } from '@quire/db/items';
import { listJobSummaries } from '@quire/db/jobList';
import { itemHref } from '@quire/web/components/Archive';
import { CancelBatchButton } from '@quire/web/components/CancelBatchButton';
import { shortId } from '@quire/web/components/format';
import { JobsTable } from '@quire/web/components/JobsTable';
import { LiveRefresh } from '@quire/web/components/LiveRefresh';
import { Time } from '@quire/web/components/Time';
import { liveJobsBaseline } from '@quire/web/lib/consoleLive';
import { pool } from '@quire/web/lib/server';
import { requirePrincipal } from '@quire/web/lib/session';
import Link from 'next/link';
import { notFound } from 'next/navigation';

export const dynamic = 'force-dynamic';
export const metadata = { title: 'Batch · Quire' };

/** Page links shown per item, and items shown; the item's own page lists all its pages. */
const MAX_PAGE_LINKS = 50;
const MAX_ITEMS = 100;

export default async function BatchPage({ params }: { params: Promise<{ batchId: string }> }) {
  const principal = await requirePrincipal();
  const { batchId } = await params;
  if (batchId.length > 100) notFound();
  const createdAt = await getBatchCreatedAt(pool(), principal.workspaceId, batchId);
  if (!createdAt) notFound();
  const digest = await liveJobsBaseline(principal.workspaceId);
  const [jobs, { files, pages }] = await Promise.all([
    listJobSummaries(pool(), principal.workspaceId, { batchId, limit: 100 }),
    loadBatchResult(pool(), principal.workspaceId, batchId),
  ]);
  const count = (status: JobStatus) => jobs.filter((j) => j.status === status).length;
  const active = jobs.filter((j) => isActiveStatus(j.status)).length;
  const done = jobs.length - active;
  // C2: the batch's pages by item, in upload order, whether or not a job reads them.
  const byItem = new Map<string, number[]>();
  for (const p of pages) byItem.set(p.itemId, [...(byItem.get(p.itemId) ?? []), p.pageId]);
  // R7: items by their titles.
  const titles = new Map(
    await Promise.all(
      [...byItem.keys()]
        .slice(0, MAX_ITEMS)
        .map(
          async (id) =>
            [id, (await getItem(pool(), principal.workspaceId, id))?.title ?? null] as const,
        ),
    ),
  );
  return (
    <main>
      <nav aria-label="Breadcrumb" className="crumbs">
        <Link href="/batches">Batches</Link> <span aria-hidden="true">/</span>{' '}
        <span className="mono">{shortId(batchId)}</span>
      </nav>
      <div className="page-head">
        <div>
          <h1>
            Batch <span className="mono">{shortId(batchId)}</span>
          </h1>
          <p className="muted">
            Uploaded <Time date={createdAt} /> · {jobs.length} job(s): {count('completed')}{' '}
            completed, {active} active, {count('failed')} failed, {count('canceled')} canceled
          </p>
        </div>
        <div className="page-head-actions">
          <LiveRefresh
            workspaceId={principal.workspaceId}
            eventTypes={['dev.quire.transcription.']}
            topics={['jobs']}
            baselines={{ jobs: digest }}
          />
        </div>
      </div>
      <section className="card" aria-labelledby="batch-progress">
        <h2 id="batch-progress">Batch progress</h2>
        <p>
          <progress max={Math.max(1, jobs.length)} value={done} aria-label="Jobs finished" /> {done}{' '}
          of {jobs.length} finished
        </p>
        {permits(principal.grant, 'batch.cancel') ? (
          <CancelBatchButton batchId={batchId} active={active} />
        ) : null}
      </section>
      {files.length > 0 && (
        <section className="card" aria-labelledby="batch-files">
          <h2 id="batch-files">Files</h2>
          <table>
            <caption className="sr-only">What became of each uploaded file</caption>
            <thead>
              <tr>
                <th scope="col">File</th>
                <th scope="col">Outcome</th>
              </tr>
            </thead>
            <tbody>
              {files.map((f) => (
                <tr key={f.index} data-outcome={f.status}>
                  <td>{f.filename ?? `file ${f.index + 1}`}</td>
                  <td>
                    {f.status === 'stored'
                      ? `stored, ${f.pages} page${f.pages === 1 ? '' : 's'}`
                      : `refused (${f.error.code}): ${f.error.message}`}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </section>
      )}
      {pages.length > 0 && (
        <section className="card" aria-labelledby="batch-pages">
          <h2 id="batch-pages">Pages</h2>
          <ul className="batch-pages">
            {[...byItem].slice(0, MAX_ITEMS).map(([itemId, ids]) => (
              <li key={itemId} data-item={itemId}>
                <Link href={itemHref(itemId)}>{titles.get(itemId) ?? 'Untitled item'}</Link>{' '}
                <span className="muted small mono">{itemId}</span>{' '}
                <span className="muted small">
                  · {ids.length} {ids.length === 1 ? 'page' : 'pages'}:
                </span>{' '}
                {ids.slice(0, MAX_PAGE_LINKS).map((id, i) => (
                  <span key={id}>
                    {i > 0 ? ', ' : ''}
                    <Link href={`/pages/${id}`} data-page={id}>
                      page {i + 1}
                    </Link>
                  </span>
                ))}
                {ids.length > MAX_PAGE_LINKS ? (
                  <span className="muted small"> and {ids.length - MAX_PAGE_LINKS} more</span>
                ) : null}
              </li>
            ))}
          </ul>
          {byItem.size > MAX_ITEMS ? (
            <p className="muted small">And {byItem.size - MAX_ITEMS} more items.</p>
          ) : null}
        </section>
      )}
      <h2>Jobs</h2>
      {jobs.length === 0 ? (
        <p className="empty card muted">
          {pages.length > 0
            ? 'No jobs: these pages came with their text (a PDF text layer or a transcript), so no engine reads them. Open them above.'
            : 'This batch has no jobs.'}
        </p>
      ) : (
        <JobsTable jobs={jobs} caption="Jobs of this batch" />
      )}
      {jobs.length > 0 ? (
        <p>
          <Link href={`/jobs?batch=${encodeURIComponent(batchId)}`}>
            Open these jobs in the jobs list
          </Link>
        </p>
      ) : null}
    </main>
  );
}
