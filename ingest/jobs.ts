import { checkJobRequest, checkProviderKind, checkResolvedProvider } from '../core/jobOptions';
import type { JobRecord } from '../core/jobStore';
import { buildSnapshot } from '../core/pricing';
import type { PriceTable } from '../core/provider';
import { resolveProvider } from '../core/providerCatalogue';
import type { JobPriority } from '../core/temporal';
import { createJob } from '../db/jobs';
import type { IngestDeps } from './batch';

/**
 * The `createJobs` step of an ingest: one job per new page, recorded in the ingest's own
 * transaction (so pages never exist without their jobs), with the provider the request
 * names or the default, checked against the providers the installation offers (M2). The
 * records are collected for the caller to start their workflows once the transaction has
 * committed; the reconciler starts any a crash leaves (J6).
 */
export function recordJobsForIngest(args: {
  workspaceId: number;
  defaultProvider: string;
  /** M2, M4: the provider names this installation offers the workspace (providersForWorkspace). */
  enabled: readonly string[];
  prices?: Record<string, PriceTable>;
  options?: Record<string, unknown>;
  /** P8: recorded on every job, so each start of its workflow, however late, uses it. */
  priority?: JobPriority;
  records: JobRecord[];
}): NonNullable<IngestDeps['createJobs']> {
  return async (tx, pages, fields, batchId) => {
    const provider = fields.provider ?? args.defaultProvider;
    checkJobRequest({ provider, options: args.options }, args.enabled);
    const jobs = [];
    for (const page of pages) {
      const { job, kind } = await createJob(tx, {
        workspaceId: args.workspaceId,
        pageId: page.pageId,
        batchId,
        snapshot: (k) => {
          checkResolvedProvider(resolveProvider(provider, k), args.enabled);
          checkProviderKind(resolveProvider(provider, k), args.options, k);
          return buildSnapshot({
            provider: resolveProvider(provider, k),
            prices: args.prices,
            options: args.options,
          });
        },
        externalReferenceId: fields.externalReferenceId,
        metadata: fields.metadata,
        priority: args.priority,
      });
      args.records.push({ ...job, kind, workspaceId: args.workspaceId, batchId });
      jobs.push({ pageId: page.pageId, jobId: job.id });
    }
    return jobs;
  };
}
