import { readFileSync } from 'node:fs';
import { createLocalBlobStore } from '../../blobs';
import { createPool } from '../../db/pool';
import { ingestBatch } from '../../ingest/batch';
import { serveIngest } from '../lib/ingestHttp';

/**
 * The ingest behind a bare HTTP server, standing in for the web process so its memory can be
 * measured alone: `POST /ws/<id>/batches` ingests, `GET /stats` reports memory, `POST /reset`
 * resets the sampled peak. Prints `LISTENING <port>` when ready.
 */
const pool = createPool(process.env.DATABASE_URL!, 4);
const blobStore = createLocalBlobStore(process.env.QUIRE_BLOB_DIR!);
let peakRss = process.memoryUsage().rss;
setInterval(() => {
  peakRss = Math.max(peakRss, process.memoryUsage().rss);
}, 20).unref();

const vmHwmBytes = () => {
  const match = /VmHWM:\s+(\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8'));
  return match ? Number(match[1]) * 1024 : null;
};

serveIngest({
  other(req, res) {
    if (req.method === 'GET' && req.url === '/stats') {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ rss: process.memoryUsage().rss, peakRss, vmHwm: vmHwmBytes() }));
      return true;
    }
    if (req.method === 'POST' && req.url === '/reset') {
      globalThis.gc?.();
      peakRss = process.memoryUsage().rss;
      res.end(JSON.stringify({ rss: peakRss }));
      return true;
    }
    return false;
  },
  ingest: (workspaceId, request) =>
    ingestBatch(
      {
        pool,
        blobStore,
        publicBaseUrl: process.env.QUIRE_PUBLIC_URL || undefined,
        // I5: bench/iiif/pdfIngest.ts renders PDFs at its own resolution.
        pdfDpi: Number(process.env.QUIRE_PDF_DPI) || undefined,
      },
      workspaceId,
      request,
    ),
});
