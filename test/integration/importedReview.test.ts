import { readFileSync } from 'node:fs';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { type Segment, segmentsOf } from '../../core/annotation';
import { parseConfig } from '../../core/config';
import { auditInvariants } from '../../db/audit';
import { getPage } from '../../db/pages';
import { createWorkspace } from '../../db/workspaces';
import { ingestBatch } from '../../ingest/batch';
import { configureWeb } from '../../web/lib/server';
import type { QuireWorker } from '../../worker/createWorker';
import { call, type RouteModule } from '../support/api';
import { KANT, MANIFESTO } from '../support/interchange';
import { seedPage } from '../support/pages';
import { createTestQuire, type TestQuire, temporalAddress } from '../support/quire';
import { uploadRequest } from '../support/uploadFixtures';

/**
 * V10 through the ingest, the workflow (simulated engine) and the review and progress routes:
 * imported text carries its own line state with its source, ground truth imported as such is
 * verified, and the review queue ranks engine lines by confidence and leaves imported lines
 * out unless asked, after every engine line when asked.
 */
let quire: TestQuire;
let worker: QuireWorker;
let running: Promise<void>;
let stopWorker: () => void;
let A: { ws: number; key: string };
const R: Record<string, RouteModule> = {};

beforeAll(async () => {
  quire = await createTestQuire();
  configureWeb(
    parseConfig({
      DATABASE_URL: quire.db.url,
      TEMPORAL_ADDRESS: temporalAddress(),
      QUIRE_TASK_QUEUE: quire.config.QUIRE_TASK_QUEUE,
      QUIRE_SECRET_KEY: quire.config.QUIRE_SECRET_KEY,
      QUIRE_DEFAULT_PROVIDER: 'simulated',
      QUIRE_ENABLE_SIMULATED: '1',
    }),
  );
  vi.spyOn(console, 'info').mockImplementation(() => {});
  R.review = await import('../../web/app/api/v1/workspaces/[ws]/review/route');
  R.progress = await import('../../web/app/api/v1/workspaces/[ws]/progress/route');
  const a = await createWorkspace(quire.db.pool, 'Imported lines');
  A = { ws: a.workspace.id, key: a.apiKey };
  worker = await quire.newWorker();
  const stop = new Promise<void>((resolve) => {
    stopWorker = resolve;
  });
  running = worker.runUntil(stop);
});

afterEach(async () => {
  expect(await auditInvariants(quire.db.pool)).toEqual([]);
});

afterAll(async () => {
  stopWorker?.();
  await running;
  const { pool } = await import('../../web/lib/server');
  await pool().end();
  vi.restoreAllMocks();
  await quire?.close();
});

async function importPage(
  itemId: string,
  image: { path: string; name: string },
  transcript: { path: string; name: string },
  fields: Record<string, string> = {},
): Promise<number> {
  const result = await ingestBatch(
    { pool: quire.db.pool, blobStore: quire.blobStore, publicBaseUrl: 'http://quire.test' },
    A.ws,
    uploadRequest([
      { name: 'itemId', value: itemId },
      ...Object.entries(fields).map(([name, value]) => ({ name, value })),
      { name: 'files[]', value: readFileSync(image.path), filename: image.name },
      { name: 'transcript', value: readFileSync(transcript.path), filename: transcript.name },
    ]),
  );
  return result.pages[0]!.pageId;
}

async function linesOf(pageId: number): Promise<Segment[]> {
  return segmentsOf((await getPage(quire.db.pool, A.ws, pageId))!.annotationPage);
}

/** A page the simulated engine read: machine lines, each with the engine's confidence. */
async function enginePage(itemId: string, lines: number): Promise<number> {
  const { pageId } = await seedPage(quire.db.pool, {
    workspaceId: A.ws,
    itemId,
    width: 1800,
    height: 1400,
  });
  const started = await quire.client.startJob({
    workspaceId: A.ws,
    pageId,
    provider: 'simulated',
    options: { simulated: { lines, seed: itemId } },
  });
  const outcome = await quire.temporal.workflow.getHandle(started.workflowId).result();
  expect(outcome.status).toBe('completed');
  return pageId;
}

type QueueLine = { pageId: number; index: number; state: string; confidence: number | null };

async function queue(query: string): Promise<{ lines: QueueLine[]; token: string | null }> {
  const response = await call(
    R.review!,
    'GET',
    `/x?${query}`,
    { ws: String(A.ws) },
    {
      key: A.key,
    },
  );
  expect(response.status).toBe(200);
  return { lines: response.json.lines, token: response.json.nextPageToken };
}

async function progressOf(itemId: string) {
  const params = { ws: String(A.ws) };
  return call(R.progress!, 'GET', `/x?itemId=${itemId}`, params, { key: A.key });
}

describe('V10 imported lines', () => {
  it('V10 an imported page is `imported` with its source, out of the queue by default, in it when asked, ranked after every engine line', async () => {
    const item = 'v10-queue';
    const kant = await importPage(
      item,
      { path: KANT.image, name: 'kant.tif' },
      { path: KANT.page, name: 'kant.page.xml' },
    );
    const imported = await linesOf(kant);
    expect(imported.length).toBeGreaterThan(20);
    for (const line of imported) {
      expect(line.stamp).toMatchObject({ state: 'imported', by: { kind: 'import', id: 'page' } });
    }
    const engine = await enginePage(item, 3);
    const read = await linesOf(engine);
    expect(read.every((l) => l.stamp === undefined && l.confidence !== undefined)).toBe(true);

    const byDefault = await queue(`itemId=${item}&pageSize=100`);
    expect(byDefault.lines.map((l) => [l.pageId, l.state])).toEqual(
      read.map(() => [engine, 'machine']),
    );

    const asked = await queue(`itemId=${item}&includeImported=true&pageSize=100`);
    expect(asked.lines).toHaveLength(read.length + imported.length);
    // Engine lines first, lowest confidence first; then every imported line, in page order.
    const engineLines = asked.lines.slice(0, read.length);
    expect(engineLines.every((l) => l.pageId === engine && l.state === 'machine')).toBe(true);
    const confidences = engineLines.map((l) => l.confidence!);
    expect(confidences).toEqual([...confidences].sort((x, y) => x - y));
    const importedLines = asked.lines.slice(read.length);
    expect(importedLines.every((l) => l.pageId === kant && l.state === 'imported')).toBe(true);
    expect(importedLines.map((l) => l.index)).toEqual(imported.map((l) => l.index));

    // Paged across the boundary, the same order; a token keeps to the queue it was made for.
    const seen: QueueLine[] = [];
    let token: string | null = null;
    do {
      const page = await queue(
        `itemId=${item}&includeImported=true&pageSize=2${token ? `&pageToken=${token}` : ''}`,
      );
      seen.push(...page.lines);
      token = page.token;
    } while (token);
    expect(seen.map((l) => [l.pageId, l.index])).toEqual(
      asked.lines.map((l) => [l.pageId, l.index]),
    );
    const first = await queue(`itemId=${item}&includeImported=true&pageSize=2`);
    const elsewhere = await call(
      R.review!,
      'GET',
      `/x?itemId=${item}&pageSize=2&pageToken=${first.token}`,
      { ws: String(A.ws) },
      { key: A.key },
    );
    expect(elsewhere.status).toBe(400);

    const progress = await progressOf(item);
    expect(progress.json.lines).toEqual({
      machine: read.length,
      imported: imported.length,
      edited: 0,
      verified: 0,
      total: read.length + imported.length,
    });
  });

  it('V10 an import declared ground truth is verified on import, by its source, and never in the queue', async () => {
    const item = 'v10-ground-truth';
    const pageId = await importPage(
      item,
      { path: MANIFESTO.image, name: 'manifesto.png' },
      { path: MANIFESTO.hocr, name: 'manifesto.hocr' },
      { transcriptVerified: 'true' },
    );
    const lines = await linesOf(pageId);
    expect(lines.length).toBeGreaterThan(20);
    for (const line of lines) {
      expect(line.stamp).toMatchObject({ state: 'verified', by: { kind: 'import', id: 'hocr' } });
    }
    const asked = await queue(`itemId=${item}&includeImported=true&pageSize=100`);
    expect(asked.lines).toEqual([]);
    const progress = await progressOf(item);
    expect(progress.json).toMatchObject({
      lines: { machine: 0, imported: 0, verified: lines.length },
      pages: { fullyVerified: 1 },
    });
  });

  it('V10 transcriptVerified must be true or false', async () => {
    await expect(
      importPage(
        'v10-refused',
        { path: KANT.image, name: 'kant.tif' },
        { path: KANT.page, name: 'kant.page.xml' },
        { transcriptVerified: 'yes' },
      ),
    ).rejects.toMatchObject({ code: 'invalid_field' });
  });
});
