import { readFile } from 'node:fs/promises';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { segmentsOf } from '../../core/annotation';
import { parseConfig } from '../../core/config';
import { parseTranscript } from '../../core/interchange/transcriptImport';
import { characterErrorRate } from '../../core/textMetrics';
import { auditInvariants } from '../../db/audit';
import { getJob } from '../../db/jobs';
import { getPage } from '../../db/pages';
import { createWorkspace } from '../../db/workspaces';
import { createProviderRegistry } from '../../providers/registry';
import { NativeTesseractProvider } from '../../providers/tesseractNative';
import { configureWeb } from '../../web/lib/server';
import type { QuireWorker } from '../../worker/createWorker';
import { call, type RouteModule } from '../support/api';
import { makeTempDir, removeDir, renderLine } from '../support/fixtures';
import { KANT } from '../support/interchange';
import { createTestQuire, type TestQuire, temporalAddress } from '../support/quire';
import { multipartBody, type Part, uploadRequest } from '../support/uploadFixtures';

/**
 * V9 through the HTTP API: the engine's language chosen at upload, at a job's request and by
 * a collection, checked against the models this machine has before anything is written, and
 * the Fraktur model reading a real Fraktur page (Kant, 1784) end to end.
 */
const tesseract = new NativeTesseractProvider();
let quire: TestQuire;
let worker: QuireWorker;
let running: Promise<void>;
let A: { ws: number; key: string };
let dir: string;
const R: Record<string, RouteModule> = {};

beforeAll(async () => {
  quire = await createTestQuire(
    { QUIRE_DEFAULT_PROVIDER: 'auto', QUIRE_HEARTBEAT_TIMEOUT_MS: '30000' },
    createProviderRegistry([tesseract]),
  );
  configureWeb(
    parseConfig({
      DATABASE_URL: quire.db.url,
      TEMPORAL_ADDRESS: temporalAddress(),
      QUIRE_TASK_QUEUE: quire.config.QUIRE_TASK_QUEUE,
      QUIRE_SECRET_KEY: quire.config.QUIRE_SECRET_KEY,
      QUIRE_DEFAULT_PROVIDER: 'auto',
      // The worker reads what the web stored.
      QUIRE_BLOB_DIR: (quire.blobStore as unknown as { root: string }).root,
    }),
  );
  R.batches = await import('../../web/app/api/v1/workspaces/[ws]/batches/route');
  R.jobs = await import('../../web/app/api/v1/workspaces/[ws]/transcription-jobs/route');
  R.collections = await import('../../web/app/api/v1/workspaces/[ws]/collections/route');
  const a = await createWorkspace(quire.db.pool, 'Aufklärung');
  A = { ws: a.workspace.id, key: a.apiKey };
  dir = await makeTempDir();
  worker = await quire.newWorker();
  running = worker.run();
});

afterEach(async () => {
  expect(await auditInvariants(quire.db.pool)).toEqual([]);
});

afterAll(async () => {
  worker?.shutdown();
  await running;
  await tesseract.close();
  const { pool } = await import('../../web/lib/server');
  await pool().end();
  await quire?.close();
  await removeDir(dir);
});

/** An upload through `POST /batches` with the workspace's key, as an integrator sends it. */
async function upload(files: Part[], fields: Record<string, string> = {}) {
  const parts: Part[] = [
    ...Object.entries(fields).map(([name, value]) => ({ name, value })),
    ...files,
  ];
  return call(
    R.batches!,
    'POST',
    `/workspaces/${A.ws}/batches`,
    { ws: String(A.ws) },
    {
      key: A.key,
      rawBody: new Uint8Array(multipartBody(parts)),
      contentType: uploadRequest([]).headers.get('content-type')!,
    },
  );
}

const filePart = async (path: string, filename: string): Promise<Part> => ({
  name: 'files[]',
  value: await readFile(path),
  filename,
});

async function counts() {
  const { rows } = await quire.db.pool.query(
    `SELECT (SELECT count(*) FROM transcription_jobs)::int AS jobs,
            (SELECT count(*) FROM transcription_job_attempts)::int AS attempts,
            (SELECT count(*) FROM pages)::int AS pages`,
  );
  return rows[0] as { jobs: number; attempts: number; pages: number };
}

/** The page's committed text against the PAGE ground truth of the Kant page. */
async function kantCer(pageId: number): Promise<number> {
  const truth = parseTranscript(await readFile(KANT.page));
  const page = await getPage(quire.db.pool, A.ws, pageId);
  const read = segmentsOf(page!.annotationPage).map((s) => s.text);
  return characterErrorRate(truth.segments.map((s) => s.text).join('\n'), read.join('\n'));
}

async function uploadKant(language: string) {
  const res = await upload([await filePart(KANT.image, 'kant-0017.tif')], { language });
  expect(res.status).toBe(201);
  const { pageId, jobId } = res.json.pages[0];
  const job = await getJob(quire.db.pool, A.ws, jobId);
  const outcome = await quire.temporal.workflow.getHandle(job!.workflowId).result();
  return { pageId, jobId, outcome, job };
}

describe('V9 engines and languages chosen by people', () => {
  it('V9 a language without an installed model is a 422 model_not_installed and starts no attempt', async () => {
    const line = await renderLine(dir, 'line.png', 'nothing is read');
    const before = await counts();
    const refused = await upload([await filePart(line, 'line.png')], { language: 'xx' });
    expect(refused.status).toBe(422);
    expect(refused.json.error.code).toBe('model_not_installed');
    expect(refused.json.error.message).toMatch(/xx/);
    expect(await counts()).toEqual(before);

    // A page that exists, asked for again in a language this machine has no model for.
    const pageId = await quire.page(A.ws);
    const withPage = await counts();
    const job = await call(
      R.jobs!,
      'POST',
      `/workspaces/${A.ws}/transcription-jobs`,
      { ws: String(A.ws) },
      { key: A.key, body: { pageId, language: 'xx' } },
    );
    expect(job.status).toBe(422);
    expect(job.json.error.code).toBe('model_not_installed');
    expect(await counts()).toEqual(withPage);
  });

  it('V9 the Kant page uploaded with language frk completes and reads far better than with the English model', async () => {
    const fraktur = await uploadKant('frk');
    expect(fraktur.outcome.status).toBe('completed');
    expect(fraktur.job!.snapshot.language).toBe('frk');
    const english = await uploadKant('en');
    expect(english.outcome.status).toBe('completed');
    const frk = await kantCer(fraktur.pageId);
    const eng = await kantCer(english.pageId);
    console.info(JSON.stringify({ test: 'kant-page', cerFrk: frk, cerEng: eng }));
    expect(frk).toBeLessThan(0.15);
    expect(frk).toBeLessThan(eng * 0.7);
    const page = await getPage(quire.db.pool, A.ws, fraktur.pageId);
    const text = segmentsOf(page!.annotationPage)
      .map((s) => s.text)
      .join(' ');
    expect(text).toContain('Aufkl');
    expect(text).toMatch(/iſt/);
  });

  it("V9 an upload into a collection takes the collection's language", async () => {
    const created = await call(
      R.collections!,
      'POST',
      `/workspaces/${A.ws}/collections`,
      { ws: String(A.ws) },
      { key: A.key, body: { title: 'Berlinische Monatsschrift', language: 'frk' } },
    );
    expect(created.status).toBe(201);
    expect(created.json.language).toBe('frk');
    const line = await renderLine(dir, 'inherit.png', 'inherited');
    const res = await upload([await filePart(line, 'inherit.png')], {
      collectionId: String(created.json.id),
    });
    expect(res.status).toBe(201);
    const job = await getJob(quire.db.pool, A.ws, res.json.pages[0].jobId);
    expect(job!.snapshot.language).toBe('frk');
    const { rows } = await quire.db.pool.query(
      'SELECT collection_id FROM items WHERE workspace_id = $1 AND id = $2',
      [A.ws, res.json.pages[0].itemId],
    );
    expect(Number(rows[0].collection_id)).toBe(created.json.id);
    await quire.temporal.workflow.getHandle(job!.workflowId).result();
  });
});
