import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLocalBlobStore } from '../../blobs';
import { segmentsOf } from '../../core/annotation';
import { parseConfig } from '../../core/config';
import { parseTranscript } from '../../core/interchange/transcriptImport';
import { getPage, publishPage, savePageEdit } from '../../db/pages';
import { withTransaction } from '../../db/pool';
import { createWorkspace } from '../../db/workspaces';
import { ingestBatch } from '../../ingest/batch';
import { configureWeb } from '../../web/lib/server';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { KANT, MANIFESTO } from '../support/interchange';
import { file, uploadRequest, wav } from '../support/uploadFixtures';

/**
 * I7 through the real route handlers, Postgres and blob store: the searchable PDF of an item
 * (and of one page) read back by poppler's `pdftotext` gives each page's lines in order; the
 * PNG page is embedded as it is, the TIFF page converted; anonymous readers get the published
 * pages with their published text, as the IIIF manifest gives them.
 */

const exec = promisify(execFile);
const BASE = 'https://quire.test';
let db: TestDatabase;
let dir: string;
let A: { ws: number; key: string };
let B: { ws: number; key: string };
let manifestoPage: number;
let kantPage: number;
let audioPage: number;
// biome-ignore lint/suspicious/noExplicitAny: route modules are called loosely, as Next does
type Route = Record<string, (r: Request, c: any) => Promise<Response> | Response>;
let itemExport: Route;
let pageExport: Route;
let iiifPdf: Route;

const hocrLines = parseTranscript(readFileSync(MANIFESTO.hocr)).segments.map((s) => s.text);
const kantLines = parseTranscript(readFileSync(KANT.page)).segments.map((s) => s.text);
const bearer = (key: string) => ({ authorization: `Bearer ${key}` });
/**
 * The Kant page has a drop cap and a catchword that share a row with the next line, which
 * pdftotext joins into one line: the text, in order, is compared without line breaks there.
 */
const inOrder = (lines: string[]) => lines.join('').replace(/\s+/g, '');

/** Writes a response's PDF to disk and reads it back with poppler. */
async function readBack(response: Response, name: string) {
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toBe('application/pdf');
  const path = join(dir, `${name}.pdf`);
  await writeFile(path, Buffer.from(await response.arrayBuffer()));
  const info = (await exec('pdfinfo', [path])).stdout;
  const pages = Number(/^Pages:\s+(\d+)/m.exec(info)?.[1]);
  const lines = async (page: number) =>
    (await exec('pdftotext', ['-raw', '-f', `${page}`, '-l', `${page}`, path, '-'])).stdout
      .split('\n')
      .map((l) => l.replace(/\s+/g, ' ').trim())
      .filter((l) => l.length > 0 && l !== '\f');
  const sizes = (await exec('pdfinfo', ['-f', '1', '-l', `${pages}`, path])).stdout;
  return { pages, lines, sizes, path };
}

beforeAll(async () => {
  db = await createTestDatabase();
  dir = await mkdtemp(join(tmpdir(), 'quire-pdf-'));
  configureWeb(
    parseConfig({
      DATABASE_URL: db.url,
      QUIRE_SECRET_KEY: 'pdf-test-secret-key-0123456789abcdefgh',
      QUIRE_PUBLIC_URL: BASE,
      QUIRE_BLOB_DIR: join(dir, 'blobs'),
    }),
  );
  const a = await createWorkspace(db.pool, 'Reading room A');
  const b = await createWorkspace(db.pool, 'Reading room B');
  A = { ws: a.workspace.id, key: a.apiKey };
  B = { ws: b.workspace.id, key: b.apiKey };
  const deps = {
    pool: db.pool,
    blobStore: createLocalBlobStore(join(dir, 'blobs')),
    publicBaseUrl: BASE,
  };
  const item = await ingestBatch(
    deps,
    A.ws,
    uploadRequest([
      { name: 'itemId', value: 'manifesto' },
      file(readFileSync(MANIFESTO.image), 'manifesto.png'),
      {
        name: 'transcript',
        value: readFileSync(MANIFESTO.hocr),
        filename: 'm.hocr',
        contentType: 'application/xhtml+xml',
      },
      file(readFileSync(KANT.image), 'kant.tif'),
      {
        name: 'transcript',
        value: readFileSync(KANT.page),
        filename: 'k.xml',
        contentType: 'application/xml',
      },
    ]),
  );
  manifestoPage = item.pages[0]!.pageId;
  kantPage = item.pages[1]!.pageId;
  // The manifesto page is published at revision 1, then edited: readers keep revision 1.
  await publishPage(db.pool, { workspaceId: A.ws, pageId: manifestoPage, expectedRevision: 1 });
  const page = await getPage(db.pool, A.ws, manifestoPage);
  const segments = segmentsOf(page!.annotationPage);
  await withTransaction(db.pool, (tx) =>
    savePageEdit(tx, {
      workspaceId: A.ws,
      pageId: manifestoPage,
      expectedRevision: 1,
      segments: [{ ...segments[0]!, text: 'MANIFESTO (draft)' }, ...segments.slice(1)],
      author: { kind: 'apiKey', id: 1 },
      channel: 'api',
    }),
  );
  const audio = await ingestBatch(
    deps,
    A.ws,
    uploadRequest([{ name: 'itemId', value: 'talk' }, file(wav(500), 'talk.wav')]),
  );
  audioPage = audio.pages[0]!.pageId;
  itemExport = (await import(
    '../../web/app/api/v1/workspaces/[ws]/items/[itemId]/export/route'
  )) as unknown as Route;
  pageExport = (await import(
    '../../web/app/api/v1/workspaces/[ws]/pages/[pageId]/export/route'
  )) as unknown as Route;
  iiifPdf = (await import('../../web/app/iiif/[ws]/[item]/pdf/route')) as unknown as Route;
}, 120_000);

afterAll(async () => {
  const { pool } = await import('../../web/lib/server');
  await pool().end();
  await db?.drop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const exportItem = (ws: number, itemId: string, key: string, format = 'pdf') =>
  itemExport.GET!(
    new Request(`${BASE}/api/v1/workspaces/${ws}/items/${itemId}/export?format=${format}`, {
      headers: bearer(key),
    }),
    { params: Promise.resolve({ ws: String(ws), itemId }) },
  );
const exportPage = (pageId: number) =>
  pageExport.GET!(
    new Request(`${BASE}/api/v1/workspaces/${A.ws}/pages/${pageId}/export?format=pdf`, {
      headers: bearer(A.key),
    }),
    { params: Promise.resolve({ ws: String(A.ws), pageId: String(pageId) }) },
  );
const readerPdf = (item: string, headers: Record<string, string> = {}) =>
  iiifPdf.GET!(new Request(`${BASE}/iiif/${A.ws}/${item}/pdf`, { headers }), {
    params: Promise.resolve({ ws: String(A.ws), item }),
  });

describe('I7 searchable PDF export', () => {
  it("I7 the item's searchable PDF read back by pdftotext gives each page's current lines in order, on pages of the scans' size", async () => {
    const pdf = await readBack(await exportItem(A.ws, 'manifesto', A.key), 'item');
    expect(pdf.pages).toBe(2);
    expect(await pdf.lines(1)).toEqual(['MANIFESTO (draft)', ...hocrLines.slice(1)]);
    expect(inOrder(await pdf.lines(2))).toBe(inOrder(kantLines));
    expect((await pdf.lines(2)).length).toBe(kantLines.length - 2);
    // At 300 px per inch: 2745 x 4445 px is 658.8 x 1066.8 pt; 1457 x 2083 px 349.68 x 499.92.
    expect(pdf.sizes).toMatch(/Page\s+1 size:\s+658\.8 x 1066\.8 pts/);
    expect(pdf.sizes).toMatch(/Page\s+2 size:\s+349\.68 x 499\.92 pts/);
    // The text is invisible: the page renders as the scan alone (no extra ink where lines are).
    const rendered = join(dir, 'page1');
    await exec('pdftoppm', [
      '-f',
      '1',
      '-l',
      '1',
      '-r',
      '300',
      '-gray',
      '-png',
      pdf.path,
      rendered,
    ]);
    const original = (await exec('identify', ['-format', '%[mean]', MANIFESTO.image])).stdout;
    const drawn = (await exec('identify', ['-format', '%[mean]', `${rendered}-1.png`])).stdout;
    expect(Math.abs(Number(drawn) - Number(original)) / 65535).toBeLessThan(0.002);
  });

  it('I7 the page export format=pdf is that page alone, with its current lines', async () => {
    const pdf = await readBack(await exportPage(kantPage), 'page');
    expect(pdf.pages).toBe(1);
    expect(inOrder(await pdf.lines(1))).toBe(inOrder(kantLines));
  });

  it('I7 anonymous readers get the published pages with their published text; a foreign key sees the same; the own key sees drafts', async () => {
    const anonymous = await readBack(await readerPdf('manifesto'), 'reader');
    expect(anonymous.pages).toBe(1);
    expect(await anonymous.lines(1)).toEqual(hocrLines);
    const foreign = await readBack(await readerPdf('manifesto', bearer(B.key)), 'foreign');
    expect(foreign.pages).toBe(1);
    const own = await readBack(await readerPdf('manifesto', bearer(A.key)), 'own');
    expect(own.pages).toBe(2);
    expect((await own.lines(1))[0]).toBe('MANIFESTO (draft)');
    // Nothing of the talk is published: readers get a 404, never a hint.
    expect((await readerPdf('talk')).status).toBe(404);
  });

  it("I7 refusals: another workspace's item is 404, an item of recordings 422, a recording's page 422, an unknown format 400", async () => {
    expect((await exportItem(B.ws, 'manifesto', B.key)).status).toBe(404);
    const audioItem = await exportItem(A.ws, 'talk', A.key);
    expect(audioItem.status).toBe(422);
    expect((await audioItem.json()).error.code).toBe('unsupported_format');
    expect((await exportPage(audioPage)).status).toBe(422);
    expect((await exportItem(A.ws, 'manifesto', A.key, 'docx')).status).toBe(400);
  });
});
