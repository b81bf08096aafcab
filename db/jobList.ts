import type { Queryable } from './pool';

/** Job summaries for lists (L1): no snapshots, segment payloads or attempts. */
export interface JobSummary {
  id: string;
  pageId: number;
  batchId: string | null;
  status: string;
  provider: string;
  stage: string | null;
  attemptNumber: number;
  completedSegments: number;
  failedSegments: number;
  totalSegments: number | null;
  errorCategory: string | null;
  createdAt: Date;
  updatedAt: Date;
}

export async function listJobSummaries(
  db: Queryable,
  workspaceId: number,
  filter: { status?: string; batchId?: string; pageId?: number; beforeId?: string; limit: number },
): Promise<JobSummary[]> {
  const { rows } = await db.query(
    `SELECT id, page_id, batch_id, status, provider, stage, last_attempt_number, completed_segments,
            failed_segments, total_segments, error_category, created_at, updated_at
       FROM transcription_jobs
      WHERE workspace_id = $1
        AND ($2::text IS NULL OR status = $2)
        AND ($3::text IS NULL OR batch_id = $3)
        AND ($4::bigint IS NULL OR page_id = $4)
        AND ($5::text IS NULL OR id < $5)
      ORDER BY id DESC
      LIMIT $6`,
    [
      workspaceId,
      filter.status ?? null,
      filter.batchId ?? null,
      filter.pageId ?? null,
      filter.beforeId ?? null,
      filter.limit,
    ],
  );
  return rows.map((r) => ({
    id: r.id,
    pageId: r.page_id,
    batchId: r.batch_id,
    status: r.status,
    provider: r.provider,
    stage: r.stage,
    attemptNumber: r.last_attempt_number,
    completedSegments: r.completed_segments,
    failedSegments: r.failed_segments,
    totalSegments: r.total_segments,
    errorCategory: r.error_category,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  }));
}
