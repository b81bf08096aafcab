import { actorName, actorOfLineAuthor } from '@quire/core/actor';
import { lineStateOf, segmentsOf } from '@quire/core/annotation';
import { countLineStates } from '@quire/core/lineStates';
import { permits } from '@quire/core/roles';
import { isActiveStatus } from '@quire/core/temporal';
import { actorNames } from '@quire/db/actors';
import { getItem, pageNumber } from '@quire/db/items';
import { listJobSummaries } from '@quire/db/jobList';
import { getJob } from '@quire/db/jobs';
import { getPage, getRevision, listRevisions } from '@quire/db/pages';
import { lineProgress } from '@quire/db/review';
import { getWorkspace } from '@quire/db/workspaces';
import { DiffTooLargeError, diffLines } from '@quire/web/components/diff';
import { shortId } from '@quire/web/components/format';
import { JobActions } from '@quire/web/components/JobActions';
import { KeptLines } from '@quire/web/components/KeptLines';
import { LiveRefresh } from '@quire/web/components/LiveRefresh';
import { PageWorkspace, type ViewSegment } from '@quire/web/components/PageWorkspace';
import { PublishButton } from '@quire/web/components/PublishButton';
import { pageImageService, ZOOMS, type Zoom } from '@quire/web/components/pageImage';
import { RevisionHistory } from '@quire/web/components/RevisionHistory';
import { Status } from '@quire/web/components/Status';
import { liveJobsBaseline } from '@quire/web/lib/consoleLive';
import { engineModels, pool } from '@quire/web/lib/server';
import { requirePrincipal } from '@quire/web/lib/session';
import Link from 'next/link';
import { notFound } from 'next/navigation';

export const dynamic = 'force-dynamic';

export async function generateMetadata({ params }: { params: Promise<{ pageId: string }> }) {
  const { pageId } = await params;
  return { title: `Page ${pageId} · Quire` };
}

const EXPORTS = {
  image: [
    { format: 'iiif', label: 'IIIF AnnotationPage' },
    { format: 'text', label: 'Plain text' },
    { format: 'alto', label: 'ALTO XML' },
    { format: 'page', label: 'PAGE XML' },
    { format: 'hocr', label: 'hOCR' },
  ],
  audio: [
    { format: 'iiif', label: 'IIIF AnnotationPage' },
    { format: 'text', label: 'Plain text' },
    { format: 'vtt', label: 'WebVTT' },
    { format: 'srt', label: 'SRT' },
  ],
} as const;

function revisionParam(value: string | string[] | undefined): number | undefined {
  const v = Array.isArray(value) ? value[0] : value;
  return v !== undefined && /^\d{1,9}$/.test(v) ? Number(v) : undefined;
}

/** V7: the page view's zoom (`?zoom=2`), 1 unless one of ZOOMS. */
function zoomParam(value: string | string[] | undefined): Zoom {
  const v = Number(Array.isArray(value) ? value[0] : value);
  return (ZOOMS as readonly number[]).includes(v) ? (v as Zoom) : 1;
}

export default async function PageView({
  params,
  searchParams,
}: {
  params: Promise<{ pageId: string }>;
  searchParams: Promise<Record<string, string | string[] | undefined>>;
}) {
  const principal = await requirePrincipal();
  const { pageId: raw } = await params;
  if (!/^\d{1,15}$/.test(raw)) notFound();
  const pageId = Number(raw);
  const digest = await liveJobsBaseline(principal.workspaceId);
  const page = await getPage(pool(), principal.workspaceId, pageId);
  if (!page) notFound();
  const query = await searchParams;
  const [revisions, jobs, itemProgress, workspace, item, place] = await Promise.all([
    listRevisions(pool(), principal.workspaceId, pageId, { limit: 50 }),
    listJobSummaries(pool(), principal.workspaceId, { pageId, limit: 5 }),
    lineProgress(pool(), principal.workspaceId, page.itemId),
    getWorkspace(pool(), principal.workspaceId),
    getItem(pool(), principal.workspaceId, page.itemId),
    pageNumber(pool(), principal.workspaceId, page),
  ]);
  // R7: the item by its title and the page by its place in it, never by internal ids.
  const itemName = item?.title ?? 'Untitled item';
  const pageName = `Page ${place.number} of ${place.of}`;
  const from = revisionParam(query.from);
  const to = revisionParam(query.to);
  let diff:
    | { from: number; to: number; lines: ReturnType<typeof diffLines> }
    | 'missing'
    | DiffTooLargeError
    | undefined;
  if (from !== undefined && to !== undefined) {
    const [a, b] = await Promise.all([
      getRevision(pool(), principal.workspaceId, pageId, from),
      getRevision(pool(), principal.workspaceId, pageId, to),
    ]);
    try {
      diff =
        a && b
          ? {
              from,
              to,
              lines: diffLines(
                segmentsOf(a.annotationPage).map((s) => s.text),
                segmentsOf(b.annotationPage).map((s) => s.text),
              ),
            }
          : 'missing';
    } catch (error) {
      if (!(error instanceof DiffTooLargeError)) throw error;
      diff = error;
    }
  }
  const lines = segmentsOf(page.annotationPage);
  const counts = countLineStates(lines);
  // R7: the lines' authors by name (a person's, a key's label), looked up once for the page.
  const stampNames = await actorNames(
    pool(),
    lines.flatMap((s) => (s.stamp ? [actorOfLineAuthor(s.stamp.by)] : [])),
  );
  const segments: ViewSegment[] = lines.map((s) => ({
    index: s.index,
    text: s.text,
    state: lineStateOf(s),
    ...(s.stamp ? { stateBy: actorName(actorOfLineAuthor(s.stamp.by), stampNames) } : {}),
    ...(s.target.kind === 'xywh'
      ? { box: s.target.box }
      : { start: s.target.start, end: s.target.end }),
    ...(s.speaker ? { speaker: s.speaker } : {}),
  }));
  const latestJob = jobs[0];
  // V3, C2: what the latest completed job kept of people's lines.
  const latestKept =
    latestJob?.status === 'completed'
      ? (await getJob(pool(), principal.workspaceId, latestJob.id))?.keptSegments
      : undefined;
  const defaultFrom = from ?? Math.max(0, page.revision - 1);
  const defaultTo = to ?? page.revision;

  return (
    <main className="wide">
      <nav aria-label="Breadcrumb" className="crumbs">
        <Link href="/">Archive</Link> <span aria-hidden="true">/</span>{' '}
        <Link href={`/items/${encodeURIComponent(page.itemId)}`} title={`item ${page.itemId}`}>
          {itemName}
        </Link>{' '}
        <span aria-hidden="true">/</span> <span aria-current="page">{pageName}</span>
      </nav>
      <div className="page-head">
        <div>
          <h1 data-page={page.id}>
            {pageName} <span className="muted">· {itemName}</span>
          </h1>
          <p className="muted">
            {page.kind === 'image' ? 'Image' : 'Recording'} · revision {page.revision} ·{' '}
            {page.publishedRevision === null
              ? 'not published'
              : `revision ${page.publishedRevision} published`}
            {lines.length > 0 ? (
              <>
                {' '}
                ·{' '}
                <span data-testid="page-progress">
                  {counts.verified} of {lines.length} lines verified, {counts.edited} edited
                </span>
              </>
            ) : null}
            {latestJob ? (
              <>
                {' '}
                · latest job <Link href={`/jobs/${latestJob.id}`}>{shortId(latestJob.id)}</Link>{' '}
                <Status value={latestJob.status} />
                {latestKept !== undefined ? (
                  <>
                    {' '}
                    · <KeptLines count={latestKept} />
                  </>
                ) : null}
              </>
            ) : null}
          </p>
        </div>
        <div className="page-head-actions">
          <Link href={`/review?item=${encodeURIComponent(page.itemId)}`}>
            Review this item ({itemProgress.lines.total - itemProgress.lines.verified} lines to
            check, {itemProgress.pages.fullyVerified} of {itemProgress.pages.total} pages verified)
          </Link>
          {latestJob && isActiveStatus(latestJob.status) ? (
            // A running job's commit appears without a reload; drafts being edited are kept.
            <LiveRefresh topics={['jobs']} baselines={{ jobs: digest }} label="Job running" />
          ) : null}
          {latestJob && permits(principal.grant, 'job.rerun') ? (
            // V9, C2: read the page again, with another engine or language if chosen.
            <JobActions
              jobId={latestJob.id}
              active={false}
              mayCancel={false}
              mayRerun
              models={engineModels()}
            />
          ) : null}
          {permits(principal.grant, 'page.publish') ? (
            <PublishButton
              pageId={page.id}
              revision={page.revision}
              publishedRevision={page.publishedRevision}
            />
          ) : null}
        </div>
      </div>

      <PageWorkspace
        key={page.id}
        pageId={page.id}
        kind={page.kind}
        width={page.width}
        height={page.height}
        revision={page.revision}
        segments={segments}
        imageService={
          page.kind === 'image' && page.blobKey ? pageImageService(page.workspaceId, page.id) : null
        }
        mediaUrl={
          page.kind === 'audio' && page.blobKey ? `/console-api/pages/${page.id}/media` : null
        }
        zoom={zoomParam(query.zoom)}
        recordingRetention={workspace?.recordingRetention ?? 'keep'}
        initialLine={revisionParam(query.line) ?? null}
        mayEdit={permits(principal.grant, 'page.edit')}
      />

      <div className="columns">
        <section aria-labelledby="exports-heading">
          <h2 id="exports-heading">Exports</h2>
          <p className="muted small">The current revision ({page.revision}).</p>
          <ul className="link-list">
            {EXPORTS[page.kind].map((e) => (
              <li key={e.format}>
                <a href={`/console-api/pages/${page.id}/export?format=${e.format}`} download>
                  {e.label}
                </a>
              </li>
            ))}
          </ul>
          <p className="small">
            <a
              href={`/iiif/${page.workspaceId}/${encodeURIComponent(page.itemId)}/manifest`}
              data-testid="iiif-manifest"
            >
              IIIF manifest of item {page.itemId}
            </a>{' '}
            <span className="muted">
              (drafts for you; published pages for anyone, to open in Mirador or Universal Viewer)
            </span>
          </p>
        </section>

        <section aria-labelledby="history-heading">
          <h2 id="history-heading">Revision history</h2>
          {revisions && revisions.length > 1 ? (
            <form method="get" className="filters" aria-label="Compare revisions">
              <RevisionSelect name="from" label="From" revisions={revisions} value={defaultFrom} />
              <RevisionSelect name="to" label="To" revisions={revisions} value={defaultTo} />
              <div className="field-actions">
                <button type="submit" className="secondary">
                  Compare
                </button>
              </div>
            </form>
          ) : null}
          {diff === 'missing' ? (
            <p role="alert" className="notice notice-error">
              One of those revisions does not exist.
            </p>
          ) : diff instanceof DiffTooLargeError ? (
            <p role="alert" className="notice notice-error" data-code={diff.code}>
              These revisions differ over {diff.removedLines} and {diff.addedLines} lines, too many
              to compare here. Export both revisions to compare them elsewhere.
            </p>
          ) : diff ? (
            <figure className="diff" aria-labelledby="diff-caption">
              <figcaption id="diff-caption">
                Changes from revision {diff.from} to revision {diff.to}
                {diff.lines.every((l) => l.op === 'same') ? ': none' : ''}
              </figcaption>
              <ol>
                {diff.lines.map((line, i) => (
                  // biome-ignore lint/suspicious/noArrayIndexKey: diff lines have no identity beyond their order
                  <li key={i} className={`diff-${line.op}`}>
                    <span className="diff-op" aria-hidden="true">
                      {line.op === 'added' ? '+' : line.op === 'removed' ? '−' : ' '}
                    </span>
                    <span className="sr-only">
                      {line.op === 'same' ? 'unchanged: ' : `${line.op}: `}
                    </span>
                    {line.text || ' '}
                  </li>
                ))}
              </ol>
            </figure>
          ) : null}
          <RevisionHistory revisions={revisions ?? []} publishedRevision={page.publishedRevision} />
        </section>
      </div>
    </main>
  );
}

function RevisionSelect(props: {
  name: 'from' | 'to';
  label: string;
  revisions: Array<{ revision: number }>;
  value: number;
}) {
  return (
    <div className="field">
      <label htmlFor={props.name}>{props.label}</label>
      <select id={props.name} name={props.name} defaultValue={String(props.value)}>
        {props.revisions.map((r) => (
          <option key={r.revision} value={r.revision}>
            {r.revision}
          </option>
        ))}
      </select>
    </div>
  );
}
