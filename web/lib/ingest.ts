import 'server-only';
import { providersForWorkspace } from '@quire/core/jobOptions';
import type { JobRecord } from '@quire/core/jobStore';
import { pricesWith } from '@quire/core/pricing';
import { enabledProviders } from '@quire/core/providerCatalogue';
import type { Principal } from '@quire/core/roles';
import type { JobPriority } from '@quire/core/temporal';
import { recordAudit } from '@quire/db/auditLog';
import { providersEnabledFor } from '@quire/db/operatorControls';
import { ingestBatch } from '@quire/ingest/batch';
import type { CreateJobs } from '@quire/ingest/commit';
import { recordJobsForIngest } from '@quire/ingest/jobs';
import { NextResponse } from 'next/server';
import { errorResponse } from './api';
import { blobStore } from './blobs';
import { config, engineModels, pool, quireClient } from './server';

/**
 * The ingest behind both `POST /api/v1/workspaces/{ws}/batches` (bearer key) and the
 * console's upload (session cookie): items, pages and one job per page are recorded in one
 * transaction; the workflows start after it commits, and the reconciler starts any that a
 * crash left unstarted (J6). Errors carry the index of the file they are about, when known.
 * `priority`: P8, `interactive` for pages a person uploads from the console and waits for;
 * the API's batches are bulk.
 */
export async function ingestAndStart(
  principal: Principal,
  request: Request,
  priority: JobPriority = 'bulk',
): Promise<NextResponse> {
  const { workspaceId } = principal;
  const records: JobRecord[] = [];
  const settings = config();
  try {
    const result = await ingestBatch(
      {
        pool: pool(),
        blobStore: blobStore(),
        publicBaseUrl: settings.QUIRE_PUBLIC_URL,
        globalQuotaBytes: settings.QUIRE_GLOBAL_QUOTA_BYTES ?? null,
        pdfDpi: settings.QUIRE_PDF_DPI,
        createJobs: await ingestJobs(workspaceId, priority, records),
      },
      workspaceId,
      request,
    );
    // R10: the upload in the audit log with who made it, once its batch is stored; a retry
    // with the same idempotency key answers that batch and is not recorded again.
    await recordAudit(
      pool(),
      principal.actor,
      {
        action: 'batch.create',
        target: `batches/${result.batchId}`,
        workspaceId,
        before: null,
        after: {
          pages: result.pages.length,
          items: new Set(result.pages.map((p) => p.itemId)).size,
          jobs: result.pages.filter((p) => p.jobId).length,
        },
      },
      { once: true },
    );
    await startRecorded(records);
    return NextResponse.json(result, { status: 201 });
  } catch (error) {
    // Logged by code and route like every other refusal (R6); an internal error, redacted.
    return errorResponse(error, request);
  }
}

/** The jobs an ingest records for its new pages, with the workspace's engines and prices. */
export async function ingestJobs(
  workspaceId: number,
  priority: JobPriority,
  records: JobRecord[],
): Promise<CreateJobs> {
  const settings = config();
  return recordJobsForIngest({
    workspaceId,
    defaultProvider: settings.QUIRE_DEFAULT_PROVIDER,
    enabled: providersForWorkspace(
      enabledProviders(settings).map((entry) => entry.name),
      await providersEnabledFor(pool(), workspaceId),
    ),
    models: engineModels(),
    prices: pricesWith(settings.QUIRE_PRICES),
    priority,
    fleetPaced: settings.QUIRE_FLEET_MAX_OPEN_WORKFLOWS !== undefined,
    records,
  });
}

/** Starts the workflows of jobs an ingest recorded; recorded is enough when Temporal is away. */
export async function startRecorded(records: JobRecord[]): Promise<void> {
  if (records.length === 0) return;
  try {
    const client = await quireClient();
    await client.startRecordedJobs(records);
  } catch {
    // Recorded is enough: the reconciler starts these jobs once Temporal answers (J6).
  }
}
