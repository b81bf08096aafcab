import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type Segment, segmentsOf } from '../../core/annotation';
import { parseConfig } from '../../core/config';
import { characterErrorRate } from '../../core/textMetrics';
import { auditInvariants } from '../../db/audit';
import { getPage } from '../../db/pages';
import { addApiKey } from '../../db/workspaces';
import { createProviderRegistry } from '../../providers/registry';
import { TesseractProvider } from '../../providers/tesseract';
import { configureWeb } from '../../web/lib/server';
import type { QuireWorker } from '../../worker/createWorker';
import { call, type RouteModule } from '../support/api';
import { MANIFESTO_PAGE } from '../support/fixtures';
import { ingestWithJobs } from '../support/ingest';
import { createTestQuire, type TestQuire, temporalAddress } from '../support/quire';

/**
 * V8 on the real manifesto scan, through the ingest, the workflow (segment, read, polish,
 * commit) with the real tesseract, and the export route: each line keeps what its own image
 * says, the words hyphenated across lines stay split where the page splits them, and only the
 * plain-text export (the reading text) joins them.
 */

/** The lines of the page that hold a word hyphenated across lines, as the scan prints them. */
const HYPHENATED_LINES = [
  'hurled back the branding reproach of Commun-',
  'ism, against the more advanced opposition par-',
  'ties, as well as against its reactionary adver-',
  'saries?',
  'meet this nursery tale of the Spectre of Commun-',
  'ism with a Manifesto of the party itself.',
  'To this end, Communists of various nationali-',
  'ties have assembled in London, and sketched the',
  'following manifesto, to be published in the Eng-',
  'lish, French, German, Italian, Flemish and Dan-',
  'ish languages.',
];

/** The words of those lines as running prose reads them. */
const JOINED_WORDS = ['Communism', 'parties', 'adversaries', 'nationalities', 'English', 'Danish'];

const tesseract = new TesseractProvider();
let quire: TestQuire;
let worker: QuireWorker;
let running: Promise<void>;
let A: { ws: number; key: string };
const R: Record<string, RouteModule> = {};

beforeAll(async () => {
  quire = await createTestQuire(
    { QUIRE_DEFAULT_PROVIDER: 'tesseract', QUIRE_HEARTBEAT_TIMEOUT_MS: '30000' },
    createProviderRegistry([tesseract]),
  );
  configureWeb(
    parseConfig({
      DATABASE_URL: quire.db.url,
      TEMPORAL_ADDRESS: temporalAddress(),
      QUIRE_TASK_QUEUE: quire.config.QUIRE_TASK_QUEUE,
      QUIRE_SECRET_KEY: quire.config.QUIRE_SECRET_KEY,
      QUIRE_DEFAULT_PROVIDER: 'tesseract',
    }),
  );
  vi.spyOn(console, 'info').mockImplementation(() => {});
  R.exportPage = await import('../../web/app/api/v1/workspaces/[ws]/pages/[pageId]/export/route');
  R.verify = await import('../../web/app/api/v1/workspaces/[ws]/pages/[pageId]/verify/route');
  const ws = await quire.workspace('Manifesto');
  A = { ws, key: await addApiKey(quire.db.pool, ws, 'reviewer') };
  worker = await quire.newWorker();
  running = worker.run();
});

afterAll(async () => {
  worker?.shutdown();
  await running;
  await tesseract.close();
  const { pool } = await import('../../web/lib/server');
  await pool().end();
  vi.restoreAllMocks();
  await quire?.close();
});

async function transcribe(): Promise<number> {
  const form = new FormData();
  const image = await readFile(MANIFESTO_PAGE);
  form.append('files[]', new Blob([image], { type: 'image/png' }), 'manifesto.png');
  const { result, records } = await ingestWithJobs(quire, A.ws, form, { provider: 'tesseract' });
  const outcome = await quire.temporal.workflow.getHandle(records[0]!.workflowId).result();
  expect(outcome.status).toBe('completed');
  return result.pages[0]!.pageId;
}

async function linesOf(pageId: number): Promise<Segment[]> {
  const page = await getPage(quire.db.pool, A.ws, pageId);
  return segmentsOf(page!.annotationPage);
}

/** The page's line that reads `expected`, best first; it must read it nearly letter for letter. */
function lineReading(lines: readonly Segment[], expected: string): Segment {
  const ranked = [...lines].sort(
    (a, b) => characterErrorRate(expected, a.text) - characterErrorRate(expected, b.text),
  );
  const best = ranked[0]!;
  expect(characterErrorRate(expected, best.text), `${expected} / ${best.text}`).toBeLessThan(0.1);
  return best;
}

/** Each hyphenated line holds its own fragments: the first word and the last as printed. */
function expectDiplomatic(lines: readonly Segment[]): void {
  expect(lines.length).toBeGreaterThanOrEqual(25);
  for (const line of lines) expect(line.text.trim()).not.toBe('');
  for (const expected of HYPHENATED_LINES) {
    const words = expected.split(' ');
    const got = lineReading(lines, expected).text.split(' ');
    expect(got[0]).toBe(words[0]);
    expect(got.at(-1)).toBe(words.at(-1));
  }
}

async function exported(pageId: number, format: string): Promise<string> {
  const params = { ws: String(A.ws), pageId: String(pageId) };
  const response = await call(R.exportPage!, 'GET', `/x?format=${format}`, params, {
    key: A.key,
  });
  expect(response.status).toBe(200);
  return response.text;
}

const plainText = (pageId: number) => exported(pageId, 'text');

describe('V8 line fidelity on the real manifesto scan', () => {
  it('V8 every line keeps the text of its own image; the plain-text export is dehyphenated', async () => {
    const pageId = await transcribe();
    const lines = await linesOf(pageId);
    expectDiplomatic(lines);
    const text = await plainText(pageId);
    for (const word of JOINED_WORDS) expect(text).toContain(word);
    expect(text).not.toMatch(/Commun-\s*\nism/u);
    // The revision says how its lines were written, in every export that carries provenance.
    const { rows } = await quire.db.pool.query(
      'SELECT provenance FROM page_revisions WHERE page_id = $1 AND source = $2',
      [pageId, 'engine'],
    );
    expect(rows.map((r) => r.provenance)).toEqual([{ lineText: 'diplomatic' }]);
    expect(await exported(pageId, 'alto')).toContain('lineText=diplomatic');
    for (const format of ['alto', 'page', 'hocr']) {
      expect(await exported(pageId, format)).toContain('line text diplomatic');
    }
    expect(await auditInvariants(quire.db.pool)).toEqual([]);
  });

  it('V8 a re-run around a verified line leaves no fragment of it in another line', async () => {
    const pageId = await transcribe();
    const first = await linesOf(pageId);
    const kept = lineReading(first, 'ish languages.');
    const page = await getPage(quire.db.pool, A.ws, pageId);
    const verified = await call(
      R.verify!,
      'POST',
      '/x',
      { ws: String(A.ws), pageId: String(pageId) },
      { key: A.key, body: { lines: [kept.index] }, headers: { 'if-match': `"${page!.revision}"` } },
    );
    expect(verified.status).toBe(200);
    const rerun = await quire.client.startJob({ workspaceId: A.ws, pageId, provider: 'tesseract' });
    const outcome = await quire.temporal.workflow.getHandle(rerun.workflowId).result();
    expect(outcome.status).toBe('completed');
    const lines = await linesOf(pageId);
    expectDiplomatic(lines);
    expect(lines.find((l) => l.index === kept.index)?.text).toBe(kept.text);
    expect(await plainText(pageId)).toContain('Danish');
  });
});
