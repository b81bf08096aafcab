import 'server-only';
import type { JobRecord } from '@quire/core/jobStore';
import type { Principal } from '@quire/core/roles';
import type { JobPriority } from '@quire/core/temporal';
import { recordAudit } from '@quire/db/auditLog';
import { type IiifImportResult, importIiifManifest, sourceUrl } from '@quire/ingest/iiifImport';
import { parseAllowHosts } from '@quire/net/ssrf';
import type { z } from 'zod';
import type { iiifImportBody } from './archiveSchemas';
import { blobStore } from './blobs';
import { ingestJobs, startRecorded } from './ingest';
import { config, pool } from './server';

/**
 * F8 behind `POST /api/v1/workspaces/{ws}/iiif-imports` and the console's import form: the
 * manifest's item, its pages and a job per page without a transcription, recorded in one
 * transaction (ingest/iiifImport.ts); the import audited with its person, the jobs started.
 */
export async function importIiif(
  principal: Principal,
  body: z.output<typeof iiifImportBody>,
  priority: JobPriority = 'bulk',
): Promise<IiifImportResult> {
  const { workspaceId } = principal;
  const settings = config();
  const records: JobRecord[] = [];
  const result = await importIiifManifest(
    {
      pool: pool(),
      blobStore: blobStore(),
      publicBaseUrl: settings.QUIRE_PUBLIC_URL,
      globalQuotaBytes: settings.QUIRE_GLOBAL_QUOTA_BYTES ?? null,
      createJobs: await ingestJobs(workspaceId, priority, records),
      iiif: {
        allowHosts: parseAllowHosts(settings.QUIRE_IIIF_ALLOW_HOSTS),
        imageMaxSide: settings.QUIRE_IIIF_IMAGE_MAX_SIDE,
        maxCanvases: settings.QUIRE_IIIF_MAX_CANVASES,
        maxDocumentBytes: settings.QUIRE_IIIF_MAX_DOCUMENT_BYTES,
        maxImageBytes: settings.QUIRE_IIIF_MAX_IMAGE_BYTES,
        timeoutMs: settings.QUIRE_IIIF_FETCH_TIMEOUT_MS,
      },
    },
    workspaceId,
    {
      manifestUrl: body.manifestUrl,
      collectionId: body.collectionId ?? null,
      title: body.title ?? null,
    },
  );
  const itemId = result.pages[0]?.itemId;
  await recordAudit(pool(), principal.actor, {
    action: 'item.import_iiif',
    target: `items/${itemId}`,
    workspaceId,
    before: null,
    after: {
      manifest: sourceUrl(body.manifestUrl),
      batchId: result.batchId,
      pages: result.pages.length,
      transcribed: result.manifest.transcribed,
      jobs: records.length,
    },
  });
  await startRecorded(records);
  return result;
}
