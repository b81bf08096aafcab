import { readFileSync } from 'node:fs';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createLocalBlobStore } from '../../blobs';
import { type AnnotationPage, type Segment, segmentsOf } from '../../core/annotation';
import { parseTranscript } from '../../core/interchange/transcriptImport';
import type { JobRecord } from '../../core/jobStore';
import { KNOWN_PROVIDERS } from '../../core/providerCatalogue';
import { auditInvariants } from '../../db/audit';
import { getPage, listRevisions } from '../../db/pages';
import { type IngestDeps, ingestBatch } from '../../ingest/batch';
import { recordJobsForIngest } from '../../ingest/jobs';
import { httpErrorOf } from '../../web/lib/errors';
import { pageExportResponse } from '../../web/lib/pageHttp';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { KANT, MANIFESTO } from '../support/interchange';
import { file, type Part, png, uploadRequest, wav } from '../support/uploadFixtures';

/**
 * I3 through the real ingest and Postgres: a PAGE or ALTO file uploaded beside its image
 * becomes revision 1 (source `import`, provenance kept), every refusal stores nothing, and
 * PAGE and ALTO go round: export, import into a new item, export again.
 */

let db: TestDatabase;
let blobDir: string;
let deps: IngestDeps;
let ws: number;
let records: JobRecord[];

const kantImage = readFileSync(KANT.image);
const kantPage = readFileSync(KANT.page);
const kantAlto = readFileSync(KANT.alto);
const manifesto = readFileSync(MANIFESTO.image);
const manifestoHocr = readFileSync(MANIFESTO.hocr);

const transcript = (value: Uint8Array | string, filename = 'page.xml'): Part => ({
  name: 'transcript',
  value,
  filename,
  contentType: 'application/xml',
});

async function filesUnder(dir: string): Promise<string[]> {
  try {
    return (await readdir(dir, { recursive: true, withFileTypes: true }))
      .filter((e) => e.isFile())
      .map((e) => join(e.parentPath, e.name));
  } catch {
    return [];
  }
}

async function expectNothingStored() {
  expect(await filesUnder(blobDir)).toEqual([]);
  const { rows } = await db.pool.query(
    `SELECT (SELECT count(*) FROM blobs)::int AS blobs, (SELECT count(*) FROM blob_cleanups)::int AS cleanups,
            (SELECT count(*) FROM pages)::int AS pages, (SELECT count(*) FROM items)::int AS items,
            (SELECT count(*) FROM batches)::int AS batches, (SELECT count(*) FROM page_revisions)::int AS revisions,
            (SELECT count(*) FROM transcription_jobs)::int AS jobs`,
  );
  expect(rows[0]).toEqual({
    blobs: 0,
    cleanups: 0,
    pages: 0,
    items: 0,
    batches: 0,
    revisions: 0,
    jobs: 0,
  });
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

async function exportBody(pageId: number, format: 'page' | 'alto' | 'hocr'): Promise<string> {
  const page = await getPage(db.pool, ws, pageId);
  return pageExportResponse(page!, format).text();
}

/**
 * Created/LastChange are the export's own time, and a line's stamp the time of its import
 * (V10); everything else must match.
 */
const withoutTimes = (xml: string) =>
  xml
    .replace(/<(Created|LastChange)>[^<]*</g, '<$1><')
    .replace(/ at \d{4}-\d\d-\d\dT[\d:.]+Z"/g, ' at TIME"');

/** V10: the lines of an imported page, each stamped `imported` by its source, then unstamped. */
function importedLines(annotationPage: AnnotationPage, source: string): Segment[] {
  const segments = segmentsOf(annotationPage);
  for (const s of segments) {
    expect(s.stamp).toMatchObject({ state: 'imported', by: { kind: 'import', id: source } });
  }
  return segments.map(({ stamp: _, ...s }) => s);
}

beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db?.drop();
});
beforeEach(async () => {
  await db.pool.query(
    'TRUNCATE transcription_jobs, batch_pages, page_revisions, pages, items, batches, blob_cleanups, blobs CASCADE',
  );
  if (blobDir) await rm(blobDir, { recursive: true, force: true });
  blobDir = await mkdtemp(join(tmpdir(), 'quire-import-'));
  const { rows } = await db.pool.query<{ id: number }>(
    "INSERT INTO workspaces (name) VALUES ('imports') RETURNING id",
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

describe('I3 import', () => {
  it('I3 a real PAGE file (OCR-D Kant 1784 ground truth) beside its image becomes revision 1, source import, producer kept', async () => {
    const result = await upload([
      file(kantImage, 'kant_0017.tif'),
      transcript(kantPage, 'PAGE_0017_PAGE.xml'),
      file(png(40, 30), 'plain.png'),
    ]);
    expect(result.pages).toHaveLength(2);
    const [imported, plain] = result.pages;
    // The imported page is the work: no job overwrites it; the other page gets its job.
    expect(imported!.jobId).toBeUndefined();
    expect(plain!.jobId).toBeDefined();
    expect(records.map((r) => r.pageId)).toEqual([plain!.pageId]);

    const page = await getPage(db.pool, ws, imported!.pageId);
    expect(page!.revision).toBe(1);
    expect([page!.width, page!.height]).toEqual([KANT.width, KANT.height]);
    const expected = parseTranscript(kantPage).segments;
    expect(importedLines(page!.annotationPage, 'page')).toEqual(expected);
    expect(page!.annotationPage.id).toBe(`${page!.canvasUri}/annotations/r1`);
    expect(page!.annotationPage.items[0]!.body.value).toBe('Berliniſche Monatsſchrift.');

    const revisions = await listRevisions(db.pool, ws, imported!.pageId, { limit: 10 });
    expect(revisions!.map((r) => [r.revision, r.source])).toEqual([
      [1, 'import'],
      [0, 'initial'],
    ]);
    expect(revisions![0]!.provenance).toMatchObject({
      format: 'page',
      namespace: 'http://schema.primaresearch.org/PAGE/gts/pagecontent/2019-07-15',
      producer: 'OCR-D',
      filename: 'PAGE_0017_PAGE.xml',
    });
    expect(revisions![0]!.provenance!.sha256).toMatch(/^[0-9a-f]{64}$/);
    // The search index covers the imported text.
    const { rows } = await db.pool.query(
      "SELECT id FROM pages WHERE search_tsv @@ plainto_tsquery('simple', 'December')",
    );
    expect(rows.map((r) => Number(r.id))).toEqual([imported!.pageId]);
    expect(await auditInvariants(db.pool)).toEqual([]);
  });

  it('I3 an ALTO file beside its image is imported the same way, with its format in the provenance', async () => {
    const result = await upload([file(kantImage, 'kant.tif'), transcript(kantAlto, 'alto.xml')]);
    const page = await getPage(db.pool, ws, result.pages[0]!.pageId);
    expect(page!.revision).toBe(1);
    expect(importedLines(page!.annotationPage, 'alto')).toEqual(parseTranscript(kantAlto).segments);
    const revisions = await listRevisions(db.pool, ws, page!.id, { limit: 1 });
    expect(revisions![0]).toMatchObject({ source: 'import', provenance: { format: 'alto' } });
  });

  const tooSmall = { limits: { maxTranscriptBytes: 4096 } };
  const refusals: Array<[string, () => Part[], string, number, Partial<IngestDeps>?]> = [
    [
      'malformed XML',
      () => [file(kantImage), transcript('<PcGts><Page')],
      'transcript_malformed',
      400,
    ],
    [
      'a DOCTYPE',
      () => [
        file(kantImage),
        transcript(
          '<?xml version="1.0"?><!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]><x>&e;</x>',
        ),
      ],
      'transcript_malformed',
      400,
    ],
    [
      'neither PAGE nor ALTO',
      () => [file(kantImage), transcript('<html xmlns="http://www.w3.org/1999/xhtml"/>')],
      'transcript_unsupported',
      415,
    ],
    [
      'an oversized file',
      () => [file(kantImage), transcript(kantPage)],
      'transcript_too_large',
      413,
      tooSmall,
    ],
    [
      'a size that does not match the image',
      () => [file(png(40, 30)), transcript(kantPage)],
      'transcript_size_mismatch',
      422,
    ],
    [
      'a transcript before any image',
      () => [transcript(kantPage), file(kantImage)],
      'transcript_without_image',
      400,
    ],
    [
      'two transcripts for one image',
      () => [file(kantImage), transcript(kantPage), transcript(kantAlto)],
      'duplicate_transcript',
      400,
    ],
    [
      'a transcript beside a recording',
      () => [file(wav(500)), transcript(kantPage)],
      'transcript_for_audio',
      422,
    ],
    [
      'a good file after a bad one',
      () => [file(kantImage), transcript(kantPage), file(kantImage), transcript('not xml')],
      'transcript_malformed',
      400,
    ],
  ];
  it.each(refusals)(
    'I3 refuses %s with a stable code and stores nothing',
    async (_label, parts, code, status, override) => {
      const refused = await refusal(parts(), override ?? {});
      expect(refused.body.error.code).toBe(code);
      expect(refused.status).toBe(status);
      // The message never quotes the file.
      expect(refused.body.error.message).not.toMatch(/passwd|Berlini/);
      await expectNothingStored();
    },
  );

  it('I3 I9 the upload rules still hold beside transcripts: a bad image is refused alone, with the transcript after it, and its neighbour keeps its own', async () => {
    const result = await upload([
      file(kantImage),
      transcript(kantPage),
      file(Buffer.from('not an image at all, just text')),
      transcript(kantPage),
    ]);
    expect(result.files.map((f) => [f.index, f.status])).toEqual([
      [0, 'stored'],
      [1, 'refused'],
    ]);
    expect(result.files[1]).toMatchObject({ error: { code: 'unsupported_media_type' } });
    expect(result.pages).toHaveLength(1);
    // The good image's own transcript is its revision 1; the refused file's went with it.
    expect((await getPage(db.pool, ws, result.pages[0]!.pageId))!.revision).toBe(1);
    const { rows } = await db.pool.query('SELECT count(*)::int AS n FROM page_revisions');
    expect(rows[0].n).toBe(2);
  });

  it('I3 a bad image alone is refused and nothing stays', async () => {
    const refused = await refusal([
      file(Buffer.from('not an image at all, just text')),
      transcript(kantPage),
    ]);
    expect(refused.body.error.code).toBe('unsupported_media_type');
    await expectNothingStored();
  });
});

describe('I6 hOCR import', () => {
  it('I6 a real hOCR file (tesseract 5.3 over the manifesto scan) beside its image becomes revision 1, source import, format hocr, each ocr_line a line with its bbox and words', async () => {
    const result = await upload([
      file(manifesto, 'manifesto-page-0015.png'),
      transcript(manifestoHocr, 'manifesto.hocr'),
    ]);
    expect(result.pages[0]!.jobId).toBeUndefined();
    const page = await getPage(db.pool, ws, result.pages[0]!.pageId);
    expect(page!.revision).toBe(1);
    // Read from the file here with a plain pattern, not the importer's parser.
    const source = manifestoHocr.toString('utf8');
    const expected = [
      ...source.matchAll(
        /<span class='ocr_line'[^>]*title="bbox (\d+) (\d+) (\d+) (\d+);[^"]*">([\s\S]*?)\n\s*<\/span>/g,
      ),
    ].map((m) => ({
      box: { x: +m[1]!, y: +m[2]!, w: +m[3]! - +m[1]!, h: +m[4]! - +m[2]! },
      text: [...m[5]!.matchAll(/<span class='ocrx_word'[^>]*>([^<]*)<\/span>/g)]
        .map((w) =>
          w[1]!
            .replace(/&amp;/g, '&')
            .replace(/&#39;/g, "'")
            .replace(/&quot;/g, '"'),
        )
        .join(' '),
    }));
    expect(expected).toHaveLength(30);
    const segments = segmentsOf(page!.annotationPage);
    expect(
      segments.map((s) => ({ box: s.target.kind === 'xywh' ? s.target.box : null, text: s.text })),
    ).toEqual(expected);
    expect(segments[0]).toMatchObject({ text: 'MANIFESTO', confidence: 0.96 });
    const revisions = await listRevisions(db.pool, ws, page!.id, { limit: 1 });
    expect(revisions![0]).toMatchObject({
      source: 'import',
      provenance: {
        format: 'hocr',
        namespace: 'http://www.w3.org/1999/xhtml',
        producer: 'tesseract 5.3.0',
        filename: 'manifesto.hocr',
      },
    });
    expect(await auditInvariants(db.pool)).toEqual([]);
  });

  const hocr = (body: string, doctype = '') =>
    `<?xml version="1.0" encoding="UTF-8"?>${doctype}<html xmlns="http://www.w3.org/1999/xhtml"><head><meta name="ocr-system" content="x"/></head><body>${body}</body></html>`;
  const hocrPage = (w: number, h: number, lines = '') =>
    `<div class="ocr_page" title="bbox 0 0 ${w} ${h}">${lines}</div>`;
  const hocrRefusals: Array<[string, () => Part[], string, number, Partial<IngestDeps>?]> = [
    [
      'an hOCR file with two pages',
      () => [file(png(40, 30)), transcript(hocr(hocrPage(40, 30) + hocrPage(40, 30)), 'x.hocr')],
      'transcript_invalid',
      422,
    ],
    [
      'an hOCR page of another size than the image',
      () => [file(png(40, 30)), transcript(hocr(hocrPage(41, 30)), 'x.hocr')],
      'transcript_size_mismatch',
      422,
    ],
    [
      'an hOCR line without a bbox',
      () => [
        file(png(40, 30)),
        transcript(hocr(hocrPage(40, 30, '<span class="ocr_line">a</span>')), 'x.hocr'),
      ],
      'transcript_invalid',
      422,
    ],
    [
      'hOCR that is HTML, not XHTML',
      () => [file(png(40, 30)), transcript(hocr(hocrPage(40, 30, '<br>')), 'x.hocr')],
      'transcript_malformed',
      400,
    ],
    [
      'hOCR with a DOCTYPE that declares entities',
      () => [
        file(png(40, 30)),
        transcript(
          hocr(hocrPage(40, 30), '<!DOCTYPE html [<!ENTITY e SYSTEM "file:///etc/passwd">]>'),
          'x.hocr',
        ),
      ],
      'transcript_malformed',
      400,
    ],
    [
      'an hOCR file above the line limit',
      () => [
        file(png(40, 30)),
        transcript(
          hocr(hocrPage(40, 30, '<span class="ocr_line" title="bbox 0 0 4 4">a</span>'.repeat(3))),
          'x.hocr',
        ),
      ],
      'transcript_too_large',
      413,
      { limits: { maxTranscriptLines: 2 } },
    ],
  ];
  it.each(hocrRefusals)(
    'I6 refuses %s with a stable code and stores nothing',
    async (_label, parts, code, status, override) => {
      const refused = await refusal(parts(), override ?? {});
      expect(refused.body.error.code).toBe(code);
      expect(refused.status).toBe(status);
      expect(refused.body.error.message).not.toMatch(/passwd/);
      await expectNothingStored();
    },
  );
});

describe('I3 round trips', () => {
  for (const format of ['page', 'alto', 'hocr'] as const) {
    it(`${format === 'hocr' ? 'I6' : 'I3'} ${format.toUpperCase()} round trip: export, import into a new item, export again gives the same lines, boxes and text`, async () => {
      const first = await upload([file(kantImage, 'kant.tif'), transcript(kantPage)]);
      const original = await getPage(db.pool, ws, first.pages[0]!.pageId);
      const exported = await exportBody(original!.id, format);

      const second = await upload([
        { name: 'itemId', value: `round-trip-${format}` },
        file(kantImage, 'kant.tif'),
        transcript(exported, `export.${format}.xml`),
      ]);
      const copy = await getPage(db.pool, ws, second.pages[0]!.pageId);
      expect(copy!.itemId).toBe(`round-trip-${format}`);
      expect(importedLines(copy!.annotationPage, format)).toEqual(
        importedLines(original!.annotationPage, 'page'),
      );
      const again = await exportBody(copy!.id, format);
      // The documents differ only in the canvas they name (and PAGE's timestamps).
      const neutral = (xml: string, canvas: string) =>
        withoutTimes(xml).split(canvas).join('CANVAS');
      expect(neutral(again, copy!.canvasUri)).toBe(neutral(exported, original!.canvasUri));
      const revisions = await listRevisions(db.pool, ws, copy!.id, { limit: 1 });
      expect(revisions![0]!.provenance).toMatchObject({
        format,
        producer: format === 'alto' ? null : 'Quire',
      });
    });
  }
});
