import { NextResponse } from 'next/server';
import type { JobRecord } from '../../../../core/jobStore';
import {
  AUTO_PROVIDER,
  buildSnapshot,
  KNOWN_PROVIDERS,
  resolveProvider,
} from '../../../../core/pricing';
import { createJobIn } from '../../../../db/jobs';
import { IngestError, ingestBatch, ingestErrorResponse } from '../../../../ingest/batch';
import { blobStore } from '../../../lib/blobs';
import { config, pool, quireClient } from '../../../lib/server';
import { currentPrincipal } from '../../../lib/session';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

/**
 * POST /console-api/batches: the console's upload (multipart `files[]`), authorised by the
 * session cookie instead of a bearer key. It calls the same ingest as
 * POST /api/v1/workspaces/{ws}/batches, with the same job creation and start, and adds the
 * index of the file a validation error is about (`fileIndex`) so the page can show it beside
 * that file. The cookie is same-site strict, so another site cannot post here as the editor.
 */
export async function POST(request: Request) {
  const principal = await currentPrincipal();
  if (!principal) {
    return NextResponse.json(
      { error: { code: 'unauthenticated', message: 'sign in first' } },
      { status: 401 },
    );
  }
  const workspaceId = principal.workspaceId;
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
    if (mapped) {
      const fileIndex = error instanceof IngestError ? error.fileIndex : undefined;
      return NextResponse.json(
        { error: { ...mapped.body.error, ...(fileIndex !== undefined ? { fileIndex } : {}) } },
        { status: mapped.status },
      );
    }
    return NextResponse.json(
      { error: { code: 'internal', message: 'the upload could not be stored' } },
      { status: 500 },
    );
  }
}
