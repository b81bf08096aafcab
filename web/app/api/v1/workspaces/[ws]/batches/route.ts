import { NextResponse } from 'next/server';
import type { JobRecord } from '../../../../../../../core/jobStore';
import {
  AUTO_PROVIDER,
  buildSnapshot,
  KNOWN_PROVIDERS,
  resolveProvider,
} from '../../../../../../../core/pricing';
import { createJobIn } from '../../../../../../../db/jobs';
import { IngestError, ingestBatch, ingestErrorResponse } from '../../../../../../../ingest/batch';
import { blobStore } from '../../../../../../lib/blobs';
import { apiError, authorize } from '../../../../../../lib/http';
import { config, pool, quireClient } from '../../../../../../lib/server';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

/**
 * POST /api/v1/workspaces/{ws}/batches: multipart ingest (U1-U4). Items, pages and one job
 * per page are recorded in one transaction; the workflows start after it commits, and the
 * reconciler starts any that a crash left unstarted (J6).
 */
export async function POST(request: Request, { params }: { params: Promise<{ ws: string }> }) {
  const { ws } = await params;
  const auth = await authorize(request, ws);
  if ('response' in auth) return auth.response;
  const workspaceId = auth.principal.workspaceId;
  const records: JobRecord[] = [];
  try {
    const result = await ingestBatch(
      {
        pool: pool(),
        blobStore: blobStore(),
        publicBaseUrl: config().QUIRE_PUBLIC_URL,
        globalQuotaBytes: config().QUIRE_GLOBAL_QUOTA_BYTES ?? null,
        createJobs: async (tx, pages, fields, batchId) => {
          const provider = fields.provider ?? config().QUIRE_DEFAULT_PROVIDER;
          if (provider !== AUTO_PROVIDER && !KNOWN_PROVIDERS.includes(provider)) {
            throw new IngestError('unknown_provider', 422, `unknown provider ${provider}`);
          }
          const jobs = [];
          for (const page of pages) {
            const { job, kind } = await createJobIn(tx, {
              workspaceId,
              pageId: page.pageId,
              batchId,
              snapshot: (kind) => buildSnapshot({ provider: resolveProvider(provider, kind) }),
              externalReferenceId: fields.externalReferenceId,
              metadata: fields.metadata,
            });
            records.push({
              id: job.id,
              workflowId: job.workflowId,
              workspaceId,
              pageId: job.pageId,
              kind,
              provider: job.provider,
              status: job.status,
              batchId,
            });
            jobs.push({ pageId: page.pageId, jobId: job.id });
          }
          return jobs;
        },
      },
      workspaceId,
      request,
    );
    if (records.length > 0) {
      try {
        const client = await quireClient();
        for (const record of records) await client.startRecordedJob(record);
      } catch {
        // Recorded is enough: the reconciler starts these jobs once Temporal answers (J6).
      }
    }
    return NextResponse.json(result, { status: 201 });
  } catch (error) {
    const mapped = ingestErrorResponse(error);
    if (mapped) return NextResponse.json(mapped.body, { status: mapped.status });
    return apiError(500, 'internal', 'the upload could not be stored');
  }
}
