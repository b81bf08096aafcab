import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auditInvariants } from '../../db/audit';
import { ingestBatch } from '../../ingest/batch';
import { createTestQuire, type TestQuire } from '../support/quire';
import { manifestoTiff } from '../support/tiffMasters';
import { file, uploadRequest } from '../support/uploadFixtures';

/**
 * I4 through Temporal: the `imageDerivatives` workflow, run on a maintenance worker as its
 * schedule runs it, makes the derivative of a TIFF page uploaded through the ingest, once;
 * a second run finds nothing to do.
 */
let quire: TestQuire;

beforeAll(async () => {
  quire = await createTestQuire();
});

afterAll(async () => {
  await quire?.close();
});

describe('I4 the derivative schedule', () => {
  it('I4 the imageDerivatives workflow on the maintenance queue makes a TIFF page its pyramid once', async () => {
    const ws = await quire.workspace();
    const ingested = await ingestBatch(
      { pool: quire.db.pool, blobStore: quire.blobStore, publicBaseUrl: 'https://quire.test' },
      ws,
      uploadRequest([
        { name: 'itemId', value: 'manifesto' },
        file(await manifestoTiff(0.5), 'manifesto-half.tif'),
      ]),
    );
    const pageId = ingested.pages[0]!.pageId;
    const maintenance = await quire.newMaintenanceWorker();
    const runOnce = (n: number) =>
      quire.temporal.workflow.execute('imageDerivatives', {
        taskQueue: quire.config.QUIRE_MAINTENANCE_TASK_QUEUE,
        workflowId: `image-derivatives-${pageId}-${n}`,
        args: [],
      });
    const [first, second] = await maintenance.runUntil(async () => [
      await runOnce(1),
      await runOnce(2),
    ]);
    expect(first).toMatchObject({ made: 1, failed: 0 });
    expect(second).toMatchObject({ made: 0, failed: 0 });
    const { rows } = await quire.db.pool.query('SELECT derivative_key FROM pages WHERE id = $1', [
      pageId,
    ]);
    const key = rows[0].derivative_key as string;
    expect(key).toMatch(new RegExp(`^ws/${ws}/`));
    const meta = await sharp(await quire.blobStore.localPath(key)).metadata();
    expect([meta.format, meta.width, meta.height, meta.pages]).toEqual(['tiff', 1373, 2223, 5]);
    expect(await auditInvariants(quire.db.pool)).toEqual([]);
  });
});
