import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runBlobCleanup } from '../../activities/maintenance';
import { CLI_ACTOR } from '../../core/actor';
import { segmentsOf } from '../../core/annotation';
import { characterErrorRate, wordErrorRate } from '../../core/textMetrics';
import { auditInvariants } from '../../db/audit';
import { getJob } from '../../db/jobs';
import { getPage } from '../../db/pages';
import { setRecordingRetention } from '../../db/workspaces';
import { PocketsphinxProvider } from '../../providers/pocketsphinx';
import { createProviderRegistry } from '../../providers/registry';
import { SimulatedProvider } from '../../providers/simulated';
import { TesseractProvider } from '../../providers/tesseract';
import type { QuireWorker } from '../../worker/createWorker';
import {
  makeTempDir,
  PAGE_LINES,
  removeDir,
  renderPage,
  SPEECH_SENTENCES,
  synthesizeSpeech,
} from '../support/fixtures';
import { ingestWithJobs } from '../support/ingest';
import { createTestQuire, type TestQuire } from '../support/quire';

/**
 * Q2 end to end: files go in through the ingest, the workflow runs the real offline engines
 * (tesseract.js for images, pocketsphinx for audio), and the committed transcript is measured.
 */
const tesseract = new TesseractProvider();
let quire: TestQuire;
let worker: QuireWorker;
let running: Promise<void>;
let dir: string;
let ws: number;

beforeAll(async () => {
  quire = await createTestQuire(
    { QUIRE_DEFAULT_PROVIDER: 'auto', QUIRE_HEARTBEAT_TIMEOUT_MS: '30000' },
    createProviderRegistry([tesseract, new PocketsphinxProvider(), new SimulatedProvider()]),
  );
  ws = await quire.workspace();
  // V6: this workspace follows the clinical rule, Quire's copy of a recording goes once the
  // engine holds it (a new workspace keeps its recordings).
  await setRecordingRetention(quire.db.pool, CLI_ACTOR, ws, 'delete-after-recognition');
  dir = await makeTempDir();
  worker = await quire.newWorker();
  running = worker.run();
});

afterAll(async () => {
  worker?.shutdown();
  await running;
  await tesseract.close();
  await quire?.close();
  await removeDir(dir);
});

async function ingestAndRun(file: string, name: string, mediaType: string) {
  const form = new FormData();
  form.append('files[]', new Blob([await readFile(file)], { type: mediaType }), name);
  const { result, records } = await ingestWithJobs(quire, ws, form);
  const outcome = await quire.temporal.workflow.getHandle(records[0]!.workflowId).result();
  return { result, outcome, jobId: records[0]!.id, pageId: result.pages[0]!.pageId };
}

describe('real engines through the workflow (Q2)', () => {
  it('Q2 a rendered page image is segmented and read by tesseract, CER at most 5%', async () => {
    const image = await renderPage(dir, 'page.png', PAGE_LINES);
    const { outcome, jobId, pageId } = await ingestAndRun(image, 'page.png', 'image/png');
    expect(outcome.status).toBe('completed');
    const job = await getJob(quire.db.pool, ws, jobId);
    expect(job?.provider).toBe('tesseract');
    expect(job?.totalSegments).toBe(PAGE_LINES.length);
    const page = await getPage(quire.db.pool, ws, pageId);
    const text = segmentsOf(page!.annotationPage)
      .map((s) => s.text)
      .join('\n');
    expect(characterErrorRate(PAGE_LINES.join('\n'), text)).toBeLessThanOrEqual(0.05);
    expect(await auditInvariants(quire.db.pool)).toEqual([]);
  });

  it('Q2 a synthesized recording is transcribed by pocketsphinx, WER at most 20%', async () => {
    const sentence = SPEECH_SENTENCES[0]!;
    const wav = await synthesizeSpeech(dir, 'speech', sentence);
    const { outcome, jobId, pageId } = await ingestAndRun(wav, 'speech.wav', 'audio/wav');
    expect(outcome.status).toBe('completed');
    const job = await getJob(quire.db.pool, ws, jobId);
    expect(job?.provider).toBe('pocketsphinx');
    const page = await getPage(quire.db.pool, ws, pageId);
    const segments = segmentsOf(page!.annotationPage);
    expect(segments.length).toBeGreaterThan(0);
    expect(segments.every((s) => s.target.kind === 't')).toBe(true);
    expect(wordErrorRate(sentence, segments.map((s) => s.text).join(' '))).toBeLessThanOrEqual(0.2);
    // T2/U3: our copy of the recording was released once the engine held it; the cleanup
    // deletes it and the quota no longer counts it.
    expect(page?.blobKey).toBeNull();
    const { rows } = await quire.db.pool.query(
      `SELECT c.blob_key AS key FROM blob_cleanups c JOIN blobs b ON b.key = c.blob_key
        WHERE c.workspace_id = $1 AND c.reason = 'delete' AND c.status = 'due' AND b.media_type LIKE 'audio/%'`,
      [ws],
    );
    expect(rows).toHaveLength(1);
    const key = rows[0].key as string;
    expect(await quire.blobStore.exists(key)).toBe(true);
    await runBlobCleanup({ pool: quire.db.pool, blobStore: quire.blobStore });
    expect(await quire.blobStore.exists(key)).toBe(false);
    expect(await auditInvariants(quire.db.pool)).toEqual([]);
  });
});
