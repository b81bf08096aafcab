import type { JobRecord } from '../core/jobStore';
import { buildSnapshot, type PriceTable } from '../core/pricing';
import { isRequestableProvider, resolveProvider } from '../core/providerCatalogue';
import { createJobIn } from '../db/jobs';
import type { IngestDeps } from './batch';
import { IngestError } from './request';

/**
 * The `createJobs` step of an ingest: one job per new page, recorded in the ingest's own
 * transaction (so pages never exist without their jobs), with the provider the request
 * names or the default. The records are collected for the caller to start their workflows
 * once the transaction has committed; the reconciler starts any a crash leaves (J6).
 */
export function recordJobsForIngest(args: {
  workspaceId: number;
  defaultProvider: string;
  prices?: Record<string, PriceTable>;
  options?: Record<string, unknown>;
  records: JobRecord[];
}): NonNullable<IngestDeps['createJobs']> {
  return async (tx, pages, fields, batchId) => {
    const provider = fields.provider ?? args.defaultProvider;
    if (!isRequestableProvider(provider)) {
      throw new IngestError('unknown_provider', 'invalid', `unknown provider ${provider}`);
    }
    const jobs = [];
    for (const page of pages) {
      const { job, kind } = await createJobIn(tx, {
        workspaceId: args.workspaceId,
        pageId: page.pageId,
        batchId,
        snapshot: (k) =>
          buildSnapshot({
            provider: resolveProvider(provider, k),
            prices: args.prices,
            options: args.options,
          }),
        externalReferenceId: fields.externalReferenceId,
        metadata: fields.metadata,
      });
      args.records.push({ ...job, kind, workspaceId: args.workspaceId, batchId });
      jobs.push({ pageId: page.pageId, jobId: job.id });
    }
    return jobs;
  };
}
