import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { segmentsOf } from '../../core/annotation';
import { auditInvariants } from '../../db/audit';
import { getPage, listRevisions } from '../../db/pages';
import { ingestBatch } from '../../ingest/batch';
import { createProviderRegistry } from '../../providers/registry';
import { TesseractProvider } from '../../providers/tesseract';
import type { QuireWorker } from '../../worker/createWorker';
import { KANT } from '../support/interchange';
import { createTestQuire, type TestQuire } from '../support/quire';
import { uploadRequest } from '../support/uploadFixtures';

/**
 * I3 with the workflow: a job started on a page whose transcript was imported reads the page
 * line by line on the imported boxes (T2's line path, no segmentation), with the real OCR
 * engine, and commits revision 2 over the import.
 */
const tesseract = new TesseractProvider();
let quire: TestQuire;
let worker: QuireWorker;
let running: Promise<void>;
let ws: number;

beforeAll(async () => {
  quire = await createTestQuire(
    { QUIRE_DEFAULT_PROVIDER: 'auto', QUIRE_HEARTBEAT_TIMEOUT_MS: '30000' },
    createProviderRegistry([tesseract]),
  );
  ws = await quire.workspace();
  worker = await quire.newWorker();
  running = worker.run();
});

afterAll(async () => {
  worker?.shutdown();
  await running;
  await tesseract.close();
  await quire?.close();
});

describe('I3 a job on an imported page', () => {
  it('I3 a later job re-reads an imported page on the imported line boxes and commits revision 2', async () => {
    const result = await ingestBatch(
      { pool: quire.db.pool, blobStore: quire.blobStore, publicBaseUrl: 'http://quire.test' },
      ws,
      uploadRequest([
        { name: 'files[]', value: readFileSync(KANT.image), filename: 'kant.tif' },
        { name: 'transcript', value: readFileSync(KANT.page), filename: 'page.xml' },
      ]),
    );
    const pageId = result.pages[0]!.pageId;
    const imported = segmentsOf((await getPage(quire.db.pool, ws, pageId))!.annotationPage);
    expect(imported.length).toBeGreaterThan(20);

    const started = await quire.client.startJob({ workspaceId: ws, pageId });
    await quire.temporal.workflow.getHandle(started.workflowId).result();

    const page = await getPage(quire.db.pool, ws, pageId);
    expect(page!.revision).toBe(2);
    const reread = segmentsOf(page!.annotationPage);
    // Same lines in the same places: the engine read the imported boxes, it did not segment.
    expect(reread.map((s) => [s.index, s.target])).toEqual(
      imported.map((s) => [s.index, s.target]),
    );
    // ...and it did read them: most lines now carry the engine's text and confidence.
    const read = reread.filter((s) => s.confidence !== undefined && s.text.length > 0);
    expect(read.length).toBeGreaterThan(imported.length / 2);
    const revisions = await listRevisions(quire.db.pool, ws, pageId, { limit: 5 });
    expect(revisions!.map((r) => r.source)).toEqual(['engine', 'import', 'initial']);
    // The per-call ledger shows recognition calls and no segmentation of the page.
    const { rows } = await quire.db.pool.query(
      'SELECT operation, count(*)::int AS n FROM provider_calls WHERE job_id = $1 GROUP BY operation',
      [started.jobId],
    );
    const operations = Object.fromEntries(rows.map((r) => [r.operation, r.n]));
    expect(operations.segment).toBeUndefined();
    expect(Object.keys(operations).length).toBeGreaterThan(0);
    expect(await auditInvariants(quire.db.pool)).toEqual([]);
  });
});
