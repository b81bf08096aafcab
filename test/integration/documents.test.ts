import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createLocalBlobStore } from '../../blobs';
import { segmentsOf } from '../../core/annotation';
import type { JobRecord } from '../../core/jobStore';
import { KNOWN_PROVIDERS } from '../../core/providerCatalogue';
import { auditInvariants } from '../../db/audit';
import { getPage, listRevisions } from '../../db/pages';
import { type IngestDeps, ingestBatch } from '../../ingest/batch';
import { recordJobsForIngest } from '../../ingest/jobs';
import { httpErrorOf } from '../../web/lib/errors';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { REAL_FIXTURES } from '../support/fixtures';
import { file, type Part, uploadRequest } from '../support/uploadFixtures';
import { vectorPdf } from '../support/vectorPdf';

/**
 * I5 through the real ingest, real Postgres and the real tools: a PDF that tesseract wrote
 * over the real scans (with its invisible text layer) becomes its pages in order in one item,
 * each page's text layer its revision 1 with the lines `pdftotext -raw` reads; a multi-page
 * TIFF made with tiffcp from the Fraktur line scans becomes its frames, pixel for pixel; a PDF
 * without text gets its engine job; every limit refuses with its code and stores nothing.
 */

const exec = promisify(execFile);

const MANIFESTO = join(REAL_FIXTURES, 'manifesto-page-0015.png');
const FRAKTUR = join(REAL_FIXTURES, 'fraktur-lines');
const FRAKTUR_LINES = [
  'bismarck_erinnerungen02_1898_0131_019.tif',
  'bismarck_erinnerungen02_1898_0137_008.tif',
  'bismarck_erinnerungen02_1898_0150_012.tif',
].map((name) => join(FRAKTUR, name));

let db: TestDatabase;
let work: string;
let blobDir: string;
let deps: IngestDeps;
let ws: number;
let records: JobRecord[];
/** Two pages written by tesseract at 300 dpi: the manifesto scan, then a Fraktur line. */
let ocrPdf: Buffer;
let ocrPdfPath: string;
/** The three Fraktur lines as one TIFF, by tiffcp. */
let multiTiff: Buffer;
/** The first Fraktur line as a PDF by tiff2pdf: an image and no text. */
let imageOnlyPdf: Buffer;

async function filesUnder(dir: string): Promise<string[]> {
  try {
    return (await readdir(dir, { recursive: true, withFileTypes: true }))
      .filter((e) => e.isFile())
      .map((e) => join(e.parentPath, e.name));
  } catch {
    return [];
  }
}

async function counts() {
  const { rows } = await db.pool.query(
    `SELECT (SELECT count(*) FROM blobs)::int AS blobs, (SELECT count(*) FROM blob_cleanups)::int AS cleanups,
            (SELECT count(*) FROM pages)::int AS pages, (SELECT count(*) FROM items)::int AS items,
            (SELECT count(*) FROM batches)::int AS batches, (SELECT count(*) FROM page_revisions)::int AS revisions,
            (SELECT count(*) FROM transcription_jobs)::int AS jobs`,
  );
  return { ...rows[0], files: (await filesUnder(blobDir)).length };
}

async function upload(parts: Part[], override: Partial<IngestDeps> = {}) {
  return ingestBatch({ ...deps, ...override }, ws, uploadRequest(parts));
}

async function refusal(parts: Part[], override: Partial<IngestDeps> = {}) {
  try {
    await upload(parts, override);
  } catch (error) {
    const mapped = httpErrorOf(error);
    if (!mapped) throw error;
    return mapped;
  }
  throw new Error('expected the upload to be refused');
}

/** The non-empty lines `pdftotext -raw` reads from one page, spaces collapsed. */
async function pdftotextLines(pdf: string, page: number): Promise<string[]> {
  const { stdout } = await exec('pdftotext', ['-raw', '-f', `${page}`, '-l', `${page}`, pdf, '-']);
  return stdout
    .split('\n')
    .map((l) => l.replace(/\s+/g, ' ').trim())
    .filter((l) => l.length > 0);
}

/** ImageMagick's signature of the decoded pixels: equal for the same image in any container. */
async function pixelSignature(path: string): Promise<string> {
  const { stdout } = await exec('identify', ['-format', '%#', path]);
  return stdout.trim();
}

beforeAll(async () => {
  db = await createTestDatabase();
  work = await mkdtemp(join(tmpdir(), 'quire-documents-'));
  const list = join(work, 'pages.txt');
  await writeFile(list, `${MANIFESTO}\n${FRAKTUR_LINES[0]}\n`);
  await exec('tesseract', [list, join(work, 'ocr'), '--dpi', '300', '-l', 'eng', 'pdf']);
  ocrPdfPath = join(work, 'ocr.pdf');
  ocrPdf = readFileSync(ocrPdfPath);
  await exec('tiffcp', [...FRAKTUR_LINES, join(work, 'lines.tif')]);
  multiTiff = readFileSync(join(work, 'lines.tif'));
  await exec('tiff2pdf', ['-o', join(work, 'image-only.pdf'), FRAKTUR_LINES[1]!]);
  imageOnlyPdf = readFileSync(join(work, 'image-only.pdf'));
}, 120_000);

afterAll(async () => {
  await db?.drop();
  if (work) await rm(work, { recursive: true, force: true });
});

beforeEach(async () => {
  await db.pool.query(
    'TRUNCATE transcription_jobs, batch_pages, page_revisions, pages, items, batches, blob_cleanups, blobs CASCADE',
  );
  if (blobDir) await rm(blobDir, { recursive: true, force: true });
  blobDir = await mkdtemp(join(tmpdir(), 'quire-documents-blobs-'));
  const { rows } = await db.pool.query<{ id: number }>(
    "INSERT INTO workspaces (name) VALUES ('documents') RETURNING id",
  );
  ws = rows[0]!.id;
  records = [];
  deps = {
    pool: db.pool,
    blobStore: createLocalBlobStore(blobDir),
    publicBaseUrl: 'https://quire.test',
    createJobs: recordJobsForIngest({
      workspaceId: ws,
      defaultProvider: 'auto',
      enabled: KNOWN_PROVIDERS,
      records,
    }),
  };
});

describe('I5 PDF ingest', () => {
  it('I5 V10 a PDF tesseract wrote over the real scans becomes its pages in order in one item, each text layer its revision 1 (source import, lines imported) with the lines pdftotext reads, and no engine job', async () => {
    const result = await upload([file(ocrPdf, 'manifesto.pdf')]);
    expect(result.pages).toHaveLength(2);
    const [first, second] = result.pages;
    expect(second!.itemId).toBe(first!.itemId);
    // The text exists: nobody pays an engine to read it again.
    expect(result.pages.map((p) => p.jobId)).toEqual([undefined, undefined]);
    expect(records).toEqual([]);

    const expectedSizes = [
      { width: 2745, height: 4445 },
      { width: 1185, height: 43 },
    ];
    for (const [i, entry] of result.pages.entries()) {
      const page = (await getPage(db.pool, ws, entry.pageId))!;
      expect(page.position).toBe(i);
      // I9: a bilevel scan comes out as PNG, the greyscale line as the JPEG tesseract stored.
      expect(page.mediaType).toBe(['image/png', 'image/jpeg'][i]);
      // I9: each page is one scanned image, taken at the scan's own pixel size.
      expect({ width: page.width, height: page.height }).toEqual(expectedSizes[i]);
      expect(page.revision).toBe(1);
      const segments = segmentsOf(page.annotationPage);
      expect(segments.map((s) => s.text)).toEqual(await pdftotextLines(ocrPdfPath, i + 1));
      for (const s of segments) {
        if (s.target.kind !== 'xywh') throw new Error('an image line has a box');
        const { x, y, w, h } = s.target.box;
        expect(w > 0 && h > 0 && x + w <= page.width! && y + h <= page.height!).toBe(true);
        // V10: a text layer's line is `imported`, its source the PDF, never `machine`.
        expect(s.stamp).toMatchObject({ state: 'imported', by: { kind: 'import', id: 'pdf' } });
        expect(s.confidence).toBeUndefined();
      }
      const revisions = await listRevisions(db.pool, ws, entry.pageId, { limit: 10 });
      expect(revisions!.map((r) => [r.revision, r.source])).toEqual([
        [1, 'import'],
        [0, 'initial'],
      ]);
      expect(revisions![0]!.provenance).toMatchObject({
        format: 'pdf',
        producer: expect.stringMatching(/^Tesseract/),
        filename: 'manifesto.pdf',
        page: i + 1,
      });
    }
    // The title line sits where tesseract found it: 126.96 pt from the left at 300 dpi.
    const title = segmentsOf((await getPage(db.pool, ws, first!.pageId))!.annotationPage)[0]!;
    expect(title.text).toBe('MANIFESTO');
    expect(title.target).toMatchObject({ kind: 'xywh', box: { x: 529, y: 566 } });
    // The uploaded PDF is not kept: its pages are.
    const { rows } = await db.pool.query('SELECT media_type FROM blobs ORDER BY key');
    expect(rows.map((r) => r.media_type).sort()).toEqual(['image/jpeg', 'image/png']);
    expect(await filesUnder(blobDir)).toHaveLength(2);
    expect(await auditInvariants(db.pool)).toEqual([]);
  });

  it('I5 transcribeTextLayer=true asks for engine jobs on pages that have a text layer', async () => {
    const result = await upload([
      { name: 'transcribeTextLayer', value: 'true' },
      file(ocrPdf, 'manifesto.pdf'),
    ]);
    expect(result.pages.every((p) => p.jobId !== undefined)).toBe(true);
    expect(records.map((r) => r.pageId)).toEqual(result.pages.map((p) => p.pageId));
    // The imported text stays revision 1 beneath whatever the engine writes next.
    expect((await getPage(db.pool, ws, result.pages[0]!.pageId))!.revision).toBe(1);
  });

  it('I5 a PDF without a text layer (tiff2pdf) becomes its page at revision 0 with its engine job', async () => {
    const result = await upload([file(imageOnlyPdf, 'scan.pdf')]);
    expect(result.pages).toHaveLength(1);
    expect(result.pages[0]!.jobId).toBeDefined();
    const page = (await getPage(db.pool, ws, result.pages[0]!.pageId))!;
    expect(page.revision).toBe(0);
    expect(page.width).toBeGreaterThan(0);
  });

  it('I5 perFile mode keeps every page of one PDF in one item, and the next file in its own', async () => {
    const result = await upload([
      { name: 'mode', value: 'perFile' },
      file(ocrPdf, 'manifesto.pdf'),
      file(imageOnlyPdf, 'scan.pdf'),
    ]);
    const items = result.pages.map((p) => p.itemId);
    expect(items).toHaveLength(3);
    expect(items[1]).toBe(items[0]);
    expect(items[2]).not.toBe(items[0]);
  });
});

describe('I9 a PDF page that is one scanned image keeps its own pixels', () => {
  const ocrAt = (ppi: number) =>
    readFileSync(join(REAL_FIXTURES, `manifesto-page-0015-ocr-${ppi}ppi.pdf`));

  it('I9 a 96-ppi scanned PDF keeps its pixels: the stored page is the bilevel scan itself, not a 300 dpi rendering', async () => {
    const result = await upload([file(ocrAt(96), 'scan-96.pdf')]);
    const page = (await getPage(db.pool, ws, result.pages[0]!.pageId))!;
    // Rendered at 300 dpi it was 8579x13891 (4.7 MB of 8-bit PNG); the scan is 2745x4445.
    expect({ width: page.width, height: page.height }).toEqual({ width: 2745, height: 4445 });
    const stored = await filesUnder(blobDir);
    expect(stored).toHaveLength(1);
    expect(await pixelSignature(stored[0]!)).toBe(await pixelSignature(MANIFESTO));
    const { rows } = await db.pool.query<{ size_bytes: string }>('SELECT size_bytes FROM blobs');
    expect(Number(rows[0]!.size_bytes)).toBeLessThan(1.1 * readFileSync(MANIFESTO).length);
    // The text layer's lines are placed in the scan's pixels (as at 300 dpi, within a pixel).
    const title = segmentsOf(page.annotationPage)[0]!;
    expect(title.text).toBe('MANIFESTO');
    if (title.target.kind !== 'xywh') throw new Error('an image line has a box');
    expect(title.target.box.x).toBe(529);
    expect(Math.abs(title.target.box.y - 566)).toBeLessThanOrEqual(1);
  });

  it("I9 a 70-dpi OCR PDF (its page 39 inches wide) is accepted at the scan's pixels, not refused as over the pixel limit", async () => {
    const result = await upload([file(ocrAt(70), 'scan-70.pdf')], {
      limits: { maxPixels: 100_000_000 },
    });
    const page = (await getPage(db.pool, ws, result.pages[0]!.pageId))!;
    expect({ width: page.width, height: page.height }).toEqual({ width: 2745, height: 4445 });
  });

  it('I9 a drawn page is still rendered at QUIRE_PDF_DPI, the pixel limit applied after the choice', async () => {
    const result = await upload([file(vectorPdf([['Drawn text']]), 'letter.pdf')], {
      pdfDpi: 150,
    });
    const page = (await getPage(db.pool, ws, result.pages[0]!.pageId))!;
    expect({ width: page.width, height: page.height }).toEqual({ width: 1275, height: 1650 });
    expect(segmentsOf(page.annotationPage).map((s) => s.text)).toEqual(['Drawn text']);
  });
});

describe('I5 multi-page TIFF ingest', () => {
  it('I5 a multi-page TIFF made with tiffcp becomes its frames in order, each pixel for pixel the frame', async () => {
    const result = await upload([file(multiTiff, 'lines.tif')]);
    expect(result.pages).toHaveLength(3);
    expect(new Set(result.pages.map((p) => p.itemId)).size).toBe(1);
    expect(result.pages.every((p) => p.jobId !== undefined)).toBe(true);
    for (const [i, entry] of result.pages.entries()) {
      const page = (await getPage(db.pool, ws, entry.pageId))!;
      expect(page.position).toBe(i);
      expect(page.mediaType).toBe('image/tiff');
      const stored = await deps.blobStore.localPath(page.blobKey!);
      expect(await pixelSignature(stored)).toBe(await pixelSignature(FRAKTUR_LINES[i]!));
      const original = await exec('identify', ['-format', '%w %h', FRAKTUR_LINES[i]!]);
      expect(`${page.width} ${page.height}`).toBe(original.stdout.trim());
    }
    expect(await auditInvariants(db.pool)).toEqual([]);
  });
});

describe('I5 limits (U4): refused with a stable code, nothing stored', () => {
  const cases: Array<[string, () => Part[], Partial<IngestDeps>, string, number]> = [
    [
      'a PDF with more pages than maxPagesPerFile',
      () => [file(ocrPdf, 'manifesto.pdf')],
      { limits: { maxPagesPerFile: 1 } },
      'too_many_pages',
      413,
    ],
    [
      'a TIFF with more frames than maxPagesPerFile',
      () => [file(multiTiff, 'lines.tif')],
      { limits: { maxPagesPerFile: 2 } },
      'too_many_pages',
      413,
    ],
    [
      'a PDF whose pages would take the request past maxPagesPerRequest',
      () => [file(ocrPdf, 'manifesto.pdf')],
      { limits: { maxPagesPerRequest: 1 } },
      'too_many_pages',
      413,
    ],
    [
      'a TIFF whose frames would take the request past maxPagesPerRequest',
      () => [file(multiTiff, 'lines.tif')],
      { limits: { maxPagesPerRequest: 2 } },
      'too_many_pages',
      413,
    ],
    [
      'a PDF page above the pixel limit at the rendering resolution',
      () => [file(ocrPdf, 'manifesto.pdf')],
      { limits: { maxPixels: 2745 * 4445 - 1 } },
      'image_too_large',
      422,
    ],
    [
      'a drawn (born-digital) PDF page above the pixel limit only at a higher resolution',
      () => [file(vectorPdf([['A letter page']]), 'letter.pdf')],
      // Letter size: 2550x3300 at 300 dpi, 5100x6600 at 600.
      { pdfDpi: 600, limits: { maxPixels: 2550 * 3300 * 2 } },
      'image_too_large',
      422,
    ],
    [
      'a PDF larger than maxFileBytes',
      () => [file(ocrPdf, 'manifesto.pdf')],
      { limits: { maxFileBytes: 64 * 1024 } },
      'file_too_large',
      413,
    ],
    [
      'a file that only starts like a PDF',
      () => [file(Buffer.from('%PDF-1.7\nthis is no PDF at all, just words\n'), 'fake.pdf')],
      {},
      'malformed_media',
      422,
    ],
    [
      'a transcript beside a PDF',
      () => [
        file(imageOnlyPdf, 'scan.pdf'),
        { name: 'transcript', value: '<x/>', filename: 'x.xml', contentType: 'application/xml' },
      ],
      {},
      'transcript_for_document',
      422,
    ],
  ];
  it.each(cases)('I5 %s', async (_name, parts, override, code, status) => {
    const before = await counts();
    const refused = await refusal(parts(), override);
    expect({ code: refused.body.error.code, status: refused.status }).toEqual({ code, status });
    expect(await counts()).toEqual(before);
    expect(before).toMatchObject({ blobs: 0, pages: 0, files: 0 });
  });

  it("I5 rendered pages count against the workspace's quota: a PDF whose pages exceed it is refused and stores nothing", async () => {
    // The PDF itself fits; its first page (the 124 KB bilevel scan, I9) does not.
    await db.pool.query('UPDATE workspaces SET quota_bytes = $2 WHERE id = $1', [
      ws,
      ocrPdf.length + 60_000,
    ]);
    const refused = await refusal([file(ocrPdf, 'manifesto.pdf')]);
    expect(refused.body.error.code).toBe('quota_exceeded');
    expect(await counts()).toMatchObject({ blobs: 0, cleanups: 0, pages: 0, items: 0, files: 0 });
  });

  it('I9 in a batch a refused file is refused alone: the good files are stored, the answer lists each outcome, and a retry answers the same', async () => {
    const parts = () => [
      { name: 'mode', value: 'perFile' },
      file(imageOnlyPdf, 'scan.pdf'),
      file(ocrPdf, 'manifesto.pdf'),
      file(Buffer.from('%PDF-1.7\nthis is no PDF at all, just words\n'), 'fake.pdf'),
      file(multiTiff, 'lines.tif'),
    ];
    const override = { limits: { maxPagesPerFile: 2 } };
    const keyed = () => [{ name: 'idempotencyKey', value: 'i9-batch' }, ...parts()];
    const result = await upload(keyed(), override);
    expect(result.files).toEqual([
      { index: 0, filename: 'scan.pdf', status: 'stored', pages: 1 },
      { index: 1, filename: 'manifesto.pdf', status: 'stored', pages: 2 },
      {
        index: 2,
        filename: 'fake.pdf',
        status: 'refused',
        error: { code: 'malformed_media', message: expect.any(String) },
      },
      {
        index: 3,
        filename: 'lines.tif',
        status: 'refused',
        error: { code: 'too_many_pages', message: expect.any(String) },
      },
    ]);
    expect(result.pages).toHaveLength(3);
    // Nothing of the refused files stays: no row, no byte, no reservation.
    expect(await counts()).toMatchObject({ pages: 3, blobs: 3, files: 3 });
    const pending = await db.pool.query("SELECT 1 FROM blob_cleanups WHERE status <> 'retired'");
    expect(pending.rowCount).toBe(0);
    const retried = await upload(keyed(), override);
    expect(retried).toEqual(result);
    expect(await auditInvariants(db.pool)).toEqual([]);
  });

  it('I9 a batch whose every file is refused is refused with the first refusal, storing nothing', async () => {
    const refused = await refusal([file(imageOnlyPdf, 'scan.pdf'), file(ocrPdf, 'manifesto.pdf')], {
      limits: { maxPagesPerFile: 0 },
    });
    expect(refused.body.error.code).toBe('too_many_pages');
    expect(await counts()).toMatchObject({ blobs: 0, cleanups: 0, pages: 0, items: 0, files: 0 });
  });
});
