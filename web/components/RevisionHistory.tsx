import type { RevisionSummary } from '@quire/db/pages';
import Link from 'next/link';
import { ActorName } from './ActorName';
import { shortId } from './format';
import { Time } from './Time';

/**
 * A page's revisions, newest first, each with who wrote it: the engine and its job, the person
 * or key by name (R7), or the imported file.
 */
export function RevisionHistory({
  revisions,
  publishedRevision,
}: {
  revisions: readonly RevisionSummary[];
  publishedRevision: number | null;
}) {
  return (
    <div className="table-wrap">
      <table>
        <caption className="sr-only">Revisions, newest first</caption>
        <thead>
          <tr>
            <th scope="col">Revision</th>
            <th scope="col">Source</th>
            <th scope="col">By</th>
            <th scope="col">When</th>
          </tr>
        </thead>
        <tbody>
          {revisions.map((r) => (
            <tr key={r.revision}>
              <td data-label="Revision">
                {r.revision}
                {r.revision === publishedRevision ? (
                  <span className="badge badge-completed"> public</span>
                ) : null}
              </td>
              <td data-label="Source">{r.source}</td>
              <td data-label="By">
                {r.source === 'engine' ? (
                  <>
                    {r.engine} {r.model}
                    {r.jobId ? (
                      <>
                        {' '}
                        · <Link href={`/jobs/${r.jobId}`}>job {shortId(r.jobId)}</Link>, attempt{' '}
                        {r.attemptNumber}
                      </>
                    ) : null}
                  </>
                ) : r.source === 'human' ? (
                  <span>
                    {r.editedByActor ? <ActorName actor={r.editedByActor} /> : 'an editor'}
                    {r.provenance?.change === 'speakers' ? (
                      <span className="muted" data-change="speakers">
                        {' '}
                        · speakers named
                      </span>
                    ) : null}
                  </span>
                ) : r.source === 'import' ? (
                  <>
                    imported {String(r.provenance?.format ?? '').toUpperCase()}
                    {r.provenance?.producer ? ` from ${String(r.provenance.producer)}` : ''}
                  </>
                ) : (
                  <span className="muted">created empty</span>
                )}
              </td>
              <td data-label="When">
                <Time date={r.createdAt} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
