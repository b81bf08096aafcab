import type { EngineModel } from '../core/engineModels';
import { checkJobRequest, chooseJobEngine } from '../core/jobOptions';
import type { JobRecord } from '../core/jobStore';
import { buildSnapshot } from '../core/pricing';
import type { PriceTable } from '../core/provider';
import type { JobPriority } from '../core/temporal';
import { createJob } from '../db/jobs';
import type { IngestDeps } from './batch';

/**
 * The `createJobs` step of an ingest: one job per new page, recorded in the ingest's own
 * transaction (so pages never exist without their jobs), with the provider, model and language
 * the request names, else the item's or its collection's (V9), else the default provider;
 * checked against the providers the installation offers (M2) and the models it has (V9). The
 * records are collected for the caller to start their workflows once the transaction has
 * committed; the reconciler starts any a crash leaves (J6).
 */
export function recordJobsForIngest(args: {
  workspaceId: number;
  defaultProvider: string;
  /** M2, M4: the provider names this installation offers the workspace (providersForWorkspace). */
  enabled: readonly string[];
  /** V9: the models this installation has; absent, languages are not checked. */
  models?: readonly EngineModel[];
  prices?: Record<string, PriceTable>;
  options?: Record<string, unknown>;
  /** P8: recorded on every job, so each start of its workflow, however late, uses it. */
  priority?: JobPriority;
  /** D14: the installation paces bulk jobs (QUIRE_FLEET_MAX_OPEN_WORKFLOWS). */
  fleetPaced?: boolean;
  records: JobRecord[];
}): NonNullable<IngestDeps['createJobs']> {
  return async (tx, pages, fields, batchId) => {
    const named = fields.provider ?? args.defaultProvider;
    checkJobRequest({ provider: named, options: args.options }, args.enabled);
    const request = {
      provider: fields.provider ?? undefined,
      model: fields.model ?? undefined,
      language: fields.language ?? undefined,
    };
    const jobs = [];
    for (const page of pages) {
      const { job, kind } = await createJob(tx, {
        workspaceId: args.workspaceId,
        pageId: page.pageId,
        batchId,
        snapshot: (k, inherited) =>
          buildSnapshot({
            ...chooseJobEngine({
              request,
              options: args.options,
              inherited,
              defaultProvider: args.defaultProvider,
              kind: k,
              enabled: args.enabled,
              models: args.models,
            }),
            prices: args.prices,
            options: args.options,
          }),
        externalReferenceId: fields.externalReferenceId,
        metadata: fields.metadata,
        priority: args.priority,
        fleetPaced: args.fleetPaced,
      });
      args.records.push({ ...job, kind, workspaceId: args.workspaceId, batchId });
      jobs.push({ pageId: page.pageId, jobId: job.id });
    }
    return jobs;
  };
}
