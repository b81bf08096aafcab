import { Client } from '@temporalio/client';
import { createLocalBlobStore } from '../../blobs';
import { QuireClient } from '../../client';
import { loadConfig } from '../../core/config';
import { providersForWorkspace } from '../../core/jobOptions';
import type { JobRecord } from '../../core/jobStore';
import { pricesWith } from '../../core/pricing';
import { enabledProviders } from '../../core/providerCatalogue';
import { createJobStore } from '../../db/jobStore';
import { providersEnabledFor } from '../../db/operatorControls';
import { createPool } from '../../db/pool';
import { ingestBatch } from '../../ingest/batch';
import { recordJobsForIngest } from '../../ingest/jobs';
import { connectTemporal } from '../../net/temporalClient';
import { serveIngest } from '../lib/ingestHttp';

/**
 * The web's upload path for bench/ocr, without Next's router: `POST /ws/<id>/batches` runs
 * what `POST /api/v1/workspaces/{ws}/batches` runs (web/lib/ingest.ts): the streaming ingest
 * with one job per page in one transaction, then one workflow start per job; and
 * `POST /ws/<id>/console-batches` what the console's upload runs, its pages `interactive` (P8).
 * Configured from the environment like the web process. Prints `LISTENING <port>` when ready.
 */
const config = loadConfig();
const pool = createPool(config.DATABASE_URL, config.DATABASE_POOL_SIZE);
const blobStore = createLocalBlobStore(config.QUIRE_BLOB_DIR);
const connection = await connectTemporal(config);
// As the web builds it (web/lib/server.ts): every catalogued provider is requestable.
const client = QuireClient.fromConfig(
  config,
  new Client({ connection, namespace: config.TEMPORAL_NAMESPACE }),
  createJobStore(pool),
);

serveIngest({
  async ingest(workspaceId, request, from) {
    const records: JobRecord[] = [];
    const result = await ingestBatch(
      {
        pool,
        blobStore,
        publicBaseUrl: config.QUIRE_PUBLIC_URL,
        globalQuotaBytes: config.QUIRE_GLOBAL_QUOTA_BYTES ?? null,
        createJobs: recordJobsForIngest({
          workspaceId,
          defaultProvider: config.QUIRE_DEFAULT_PROVIDER,
          enabled: providersForWorkspace(
            enabledProviders(config).map((entry) => entry.name),
            await providersEnabledFor(pool, workspaceId),
          ),
          prices: pricesWith(config.QUIRE_PRICES),
          priority: from === 'console' ? 'interactive' : 'bulk',
          records,
        }),
      },
      workspaceId,
      request,
    );
    await client.startRecordedJobs(records);
    return result;
  },
});
