import type { JobRecord } from '../../core/jobStore';
import { ingestBatch } from '../../ingest/batch';
import { recordJobsForIngest } from '../../ingest/jobs';
import type { TestQuire } from './quire';

/**
 * Uploads a multipart form through the real ingest, records one job per page with the
 * given provider (or `auto`) and options, and starts their workflows, as the API does.
 */
export async function ingestWithJobs(
  quire: TestQuire,
  workspaceId: number,
  form: FormData,
  job: { provider?: string; options?: Record<string, unknown> } = {},
) {
  const records: JobRecord[] = [];
  const result = await ingestBatch(
    {
      pool: quire.db.pool,
      blobStore: quire.blobStore,
      publicBaseUrl: 'http://quire.test',
      createJobs: recordJobsForIngest({
        workspaceId,
        defaultProvider: job.provider ?? 'auto',
        enabled: quire.providers.names(),
        options: job.options,
        records,
      }),
    },
    workspaceId,
    new Request('http://quire.test/upload', { method: 'POST', body: form }),
  );
  for (const record of records) await quire.client.startRecordedJob(record);
  return { result, records };
}
