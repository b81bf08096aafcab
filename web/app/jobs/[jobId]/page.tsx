import type { MediaKind } from '@quire/core/media';
import { permits } from '@quire/core/roles';
import { isActiveStatus, type JobStatus, STAGES_BY_KIND } from '@quire/core/temporal';
import { getJob, listAttempts } from '@quire/db/jobs';
import { getPage } from '@quire/db/pages';
import { formatDuration, shortId } from '@quire/web/components/format';
import { JobActions } from '@quire/web/components/JobActions';
import { SegmentCounts } from '@quire/web/components/JobsTable';
import { KeptLines } from '@quire/web/components/KeptLines';
import { LiveRefresh } from '@quire/web/components/LiveRefresh';
import { Status } from '@quire/web/components/Status';
import { Time } from '@quire/web/components/Time';
import { liveJobsBaseline } from '@quire/web/lib/consoleLive';
import { engineModels, pool } from '@quire/web/lib/server';
import { requirePrincipal } from '@quire/web/lib/session';
import Link from 'next/link';
import { notFound } from 'next/navigation';

export const dynamic = 'force-dynamic';

export async function generateMetadata({ params }: { params: Promise<{ jobId: string }> }) {
  const { jobId } = await params;
  return { title: `Job ${shortId(jobId)} · Quire` };
}

type StepState = 'done' | 'current' | 'todo' | 'stopped';

function timeline(
  kind: MediaKind,
  status: JobStatus,
  stage: string | null,
): Array<{ name: string; state: StepState }> {
  const stages: readonly string[] = STAGES_BY_KIND[kind];
  const index = stage ? stages.indexOf(stage) : -1;
  return stages.map((name, i) => {
    if (status === 'completed') return { name, state: 'done' };
    if (status === 'pending' && index < 0) return { name, state: 'todo' };
    if (!isActiveStatus(status))
      return { name, state: index < 0 || i >= index ? 'stopped' : 'done' };
    if (index < 0) return { name, state: 'todo' };
    return { name, state: i < index ? 'done' : i === index ? 'current' : 'todo' };
  });
}

export default async function JobPage({ params }: { params: Promise<{ jobId: string }> }) {
  const principal = await requirePrincipal();
  const { jobId } = await params;
  if (jobId.length > 64) notFound();
  const digest = await liveJobsBaseline(principal.workspaceId);
  const job = await getJob(pool(), principal.workspaceId, jobId);
  if (!job) notFound();
  const [attempts, page] = await Promise.all([
    listAttempts(pool(), job.id),
    getPage(pool(), principal.workspaceId, job.pageId),
  ]);
  const kind = page?.kind ?? 'image';
  const active = isActiveStatus(job.status);
  const steps = timeline(kind, job.status, job.stage);

  return (
    <main>
      <nav aria-label="Breadcrumb" className="crumbs">
        <Link href="/jobs">Jobs</Link> <span aria-hidden="true">/</span>{' '}
        <span className="mono">{shortId(job.id)}</span>
      </nav>
      <div className="page-head">
        <div>
          <h1>
            Job <span className="mono">{shortId(job.id)}</span>
          </h1>
          <p className="lede">
            <Status value={job.status} detail={job.errorCategory} />{' '}
            <span className="muted">for</span>{' '}
            <Link href={`/pages/${job.pageId}`}>page {job.pageId}</Link>
            {job.stage === 'paused' ? (
              <span className="muted"> · waiting for the provider to resume</span>
            ) : null}
            {job.awaitingSlot && job.status === 'pending' ? (
              <span className="muted"> · waiting for a slot (the workspace's active-job cap)</span>
            ) : null}
          </p>
        </div>
        <div className="page-head-actions">
          {active ? (
            <LiveRefresh
              workspaceId={principal.workspaceId}
              topics={['jobs']}
              baselines={{ jobs: digest }}
            />
          ) : null}
          {/* R4: the Temporal UI is the operators'; a workspace sees the workflow id to quote. */}
          <p className="muted small" data-workflow-id={job.workflowId}>
            Workflow <span className="mono">{job.workflowId}</span>
          </p>
        </div>
      </div>

      <section aria-labelledby="progress-heading" className="card">
        <h2 id="progress-heading">Progress</h2>
        <ol className="timeline" aria-label="Stages">
          {steps.map((step) => (
            <li
              key={step.name}
              className={`step step-${step.state}`}
              aria-current={step.state === 'current' ? 'step' : undefined}
            >
              <span className="step-dot" aria-hidden="true" />
              <span className="step-name">{step.name}</span>
              <span className="sr-only">
                {' '}
                (
                {step.state === 'todo'
                  ? 'not started'
                  : step.state === 'stopped'
                    ? 'not reached'
                    : step.state}
                )
              </span>
            </li>
          ))}
        </ol>
        <p className="progress-line" data-testid="job-progress">
          Segments done / failed / total:{' '}
          <SegmentCounts
            completed={job.completedSegments}
            failed={job.failedSegments}
            total={job.totalSegments}
          />
        </p>
        {job.errorDetail ? (
          <p className="notice notice-error">
            <strong>{job.errorCategory}</strong>: {job.errorDetail}
          </p>
        ) : null}
        <JobActions
          jobId={job.id}
          active={active}
          mayCancel={permits(principal.grant, 'job.cancel')}
          mayRerun={permits(principal.grant, 'job.rerun')}
          models={engineModels()}
        />
      </section>

      <section aria-labelledby="facts-heading">
        <h2 id="facts-heading">Details</h2>
        <dl className="facts">
          <div>
            <dt>Provider</dt>
            <dd>
              {job.provider}
              {job.snapshot.model ? <span className="muted"> · {job.snapshot.model}</span> : null}
            </dd>
          </div>
          <div>
            <dt>Language</dt>
            <dd data-testid="job-language">{job.snapshot.language}</dd>
          </div>
          <div>
            <dt>Human lines kept</dt>
            <dd data-testid="job-kept-lines">
              {job.status === 'completed' ? (
                <KeptLines count={job.keptSegments} />
              ) : (
                <span className="muted">counted when the job completes</span>
              )}
            </dd>
          </div>
          <div>
            <dt>Input revision</dt>
            <dd>{job.inputRevision}</dd>
          </div>
          <div>
            <dt>Result revision</dt>
            <dd>{job.resultRevision ?? '–'}</dd>
          </div>
          <div>
            <dt>Batch</dt>
            <dd>
              {job.batchId ? (
                <Link href={`/batches/${job.batchId}`} className="mono">
                  {shortId(job.batchId)}
                </Link>
              ) : (
                '–'
              )}
            </dd>
          </div>
          <div>
            <dt>Created</dt>
            <dd>
              <Time date={job.createdAt} />
            </dd>
          </div>
          <div>
            <dt>Ended</dt>
            <dd>
              <Time date={job.endedAt} />
            </dd>
          </div>
          {job.supersededBy ? (
            <div>
              <dt>Superseded by</dt>
              <dd>
                <Link href={`/jobs/${job.supersededBy}`} className="mono">
                  {shortId(job.supersededBy)}
                </Link>
              </dd>
            </div>
          ) : null}
          <div>
            <dt>Workflow</dt>
            <dd className="mono small">{job.workflowId}</dd>
          </div>
        </dl>
      </section>

      <section aria-labelledby="attempts-heading">
        <h2 id="attempts-heading">Attempts</h2>
        {attempts.length === 0 ? (
          <p className="empty card muted">
            No attempt has started yet{active ? '; a worker will claim the job shortly.' : '.'}
          </p>
        ) : (
          <div className="table-wrap">
            <table className="attempts">
              <caption className="sr-only">Attempt audit, oldest first</caption>
              <thead>
                <tr>
                  <th scope="col">#</th>
                  <th scope="col">Outcome</th>
                  <th scope="col">Started</th>
                  <th scope="col">Duration</th>
                  <th scope="col">Error category</th>
                  <th scope="col">Result revision</th>
                  <th scope="col">Segments</th>
                  <th scope="col">Workers</th>
                </tr>
              </thead>
              <tbody>
                {attempts.map((a) => (
                  <tr key={a.attemptNumber} data-attempt={a.attemptNumber} data-outcome={a.outcome}>
                    <td data-label="#">{a.attemptNumber}</td>
                    <td data-label="Outcome">
                      <Status value={a.outcome} detail={a.refunded ? 'refunded' : null} />
                    </td>
                    <td data-label="Started">
                      <Time date={a.startedAt} />
                    </td>
                    <td data-label="Duration">
                      {a.endedAt ? (
                        formatDuration(a.endedAt.getTime() - a.startedAt.getTime())
                      ) : (
                        <span className="muted">running</span>
                      )}
                    </td>
                    <td data-label="Error category">
                      {a.errorCategory ? (
                        <span title={a.errorDetail ?? undefined}>{a.errorCategory}</span>
                      ) : (
                        <span className="muted">–</span>
                      )}
                    </td>
                    <td data-label="Result revision">{a.resultRevision ?? '–'}</td>
                    <td data-label="Segments">
                      {a.completedSegments} / {a.failedSegments} / {a.totalSegments ?? '–'}
                    </td>
                    {/* D9: who ran the engine steps; before any finished, who claimed it. */}
                    <td data-label="Workers" data-workers={a.stepWorkers.join(' ')}>
                      {a.stepWorkers.length > 0 ? (
                        a.stepWorkers.join(', ')
                      ) : (
                        <span className="muted" title="claimed by">
                          {a.owner}
                        </span>
                      )}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </section>
    </main>
  );
}
