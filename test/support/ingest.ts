import type { JobRecord } from '../../core/jobStore';
import { buildSnapshot, resolveProvider } from '../../core/pricing';
import { createJobIn } from '../../db/jobs';
import { ingestBatch } from '../../ingest/batch';
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
      createJobs: async (tx, pages, _fields, batchId) => {
        const out = [];
        for (const page of pages) {
          const created = await createJobIn(tx, {
            workspaceId,
            pageId: page.pageId,
            batchId,
            snapshot: (kind) =>
              buildSnapshot({
                provider: resolveProvider(job.provider ?? 'auto', kind),
                options: job.options,
              }),
          });
          records.push({ ...created.job, kind: created.kind, workspaceId });
          out.push({ pageId: page.pageId, jobId: created.job.id });
        }
        return out;
      },
    },
    workspaceId,
    new Request('http://quire.test/upload', { method: 'POST', body: form }),
  );
  for (const record of records) await quire.client.startRecordedJob(record);
  return { result, records };
}
