import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createLocalBlobStore } from '../../blobs';
import { emptyAnnotationPage } from '../../core/annotation';
import { blobUsage, QuotaExceededError, workspaceUsageBytes } from '../../db/blobs';
import { type IngestDeps, ingestBatch } from '../../ingest/batch';
import { IngestError } from '../../ingest/request';
import { httpErrorOf } from '../../web/lib/errors';
import { createTestDatabase, type TestDatabase } from '../support/db';
import {
  file,
  flac,
  jpeg,
  m4a,
  mp3,
  ogg,
  type Part,
  png,
  tiff,
  uploadRequest,
  wav,
  webp,
} from '../support/uploadFixtures';

let db: TestDatabase;
let blobDir: string;
let deps: IngestDeps;
let ws: number;

async function newWorkspace(quotaBytes: number | null = null): Promise<number> {
  const { rows } = await db.pool.query<{ id: number }>(
    'INSERT INTO workspaces (name, quota_bytes) VALUES ($1, $2) RETURNING id',
    ['uploads', quotaBytes],
  );
  return rows[0]!.id;
}

async function filesUnder(dir: string): Promise<string[]> {
  try {
    return (await readdir(dir, { recursive: true, withFileTypes: true }))
      .filter((e) => e.isFile())
      .map((e) => join(e.parentPath, e.name));
  } catch {
    return [];
  }
}

/** A refusal with the HTTP status the API answers it with beside its own fields (SPEC §7). */
const withStatus = (error: unknown) => ({
  ...(error as object),
  status: httpErrorOf(error)?.status,
});

async function rowCounts() {
  const { rows } = await db.pool.query(
    `SELECT (SELECT count(*) FROM blobs)::int AS blobs, (SELECT count(*) FROM blob_cleanups)::int AS cleanups,
            (SELECT count(*) FROM pages)::int AS pages, (SELECT count(*) FROM items)::int AS items,
            (SELECT count(*) FROM batches)::int AS batches, (SELECT count(*) FROM page_revisions)::int AS revisions`,
  );
  return rows[0];
}

/** U4: a refused upload leaves no file under the blob directory and no row anywhere. */
async function expectNothingStored() {
  expect(await filesUnder(blobDir)).toEqual([]);
  expect(await rowCounts()).toEqual({
    blobs: 0,
    cleanups: 0,
    pages: 0,
    items: 0,
    batches: 0,
    revisions: 0,
  });
}

async function refusal(
  parts: Part[],
  headers: Record<string, string> = {},
  override: Partial<IngestDeps> = {},
) {
  try {
    await ingestBatch({ ...deps, ...override }, ws, uploadRequest(parts, headers));
  } catch (error) {
    const mapped = httpErrorOf(error);
    if (!mapped) throw error;
    return mapped;
  }
  throw new Error('expected the upload to be refused');
}

beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db?.drop();
});
beforeEach(async () => {
  await db.pool.query(
    'TRUNCATE batch_pages, page_revisions, pages, items, batches, blob_cleanups, blobs, settings CASCADE',
  );
  if (blobDir) await rm(blobDir, { recursive: true, force: true });
  blobDir = await mkdtemp(join(tmpdir(), 'quire-uploads-'));
  ws = await newWorkspace();
  deps = {
    pool: db.pool,
    blobStore: createLocalBlobStore(blobDir),
    publicBaseUrl: 'https://quire.test',
  };
});

describe('§7 ingest', () => {
  it('U2 one item for all files: pages at revision 0 with the empty AnnotationPage, blobs referenced, reservations retired', async () => {
    const files = [
      png(40, 30),
      jpeg(640, 480),
      tiff(100, 50),
      webp(20, 10),
      wav(1500),
      flac(2000),
      mp3(40),
      ogg(900),
      m4a(3000),
    ];
    const result = await ingestBatch(
      deps,
      ws,
      uploadRequest([
        { name: 'itemId', value: 'register-1901' },
        { name: 'externalReferenceId', value: 'ext-42' },
        { name: 'metadata', value: JSON.stringify({ shelf: 'B7' }) },
        ...files.map((f, i) => file(f, `f${i}`)),
      ]),
    );
    expect(result.batchId).toMatch(/^[0-9a-f-]{36}$/);
    expect(result.pages).toHaveLength(files.length);
    for (const page of result.pages) {
      expect(page.itemId).toBe('register-1901');
      expect(page.canvasUri).toBe(
        `https://quire.test/iiif/${ws}/register-1901/canvas/${page.pageId}`,
      );
    }
    const { rows } = await db.pool.query(
      `SELECT p.id, p.position, p.kind, p.media_type, p.width, p.height, p.duration_ms, p.revision, p.annotation_page,
              p.canvas_uri, b.size_bytes, r.source, r.revision AS r_revision
         FROM pages p JOIN blobs b ON b.key = p.blob_key JOIN page_revisions r ON r.page_id = p.id
        ORDER BY p.position`,
    );
    expect(rows.map((r) => [r.kind, r.media_type, r.width, r.height, r.duration_ms])).toEqual([
      ['image', 'image/png', 40, 30, null],
      ['image', 'image/jpeg', 640, 480, null],
      ['image', 'image/tiff', 100, 50, null],
      ['image', 'image/webp', 20, 10, null],
      ['audio', 'audio/wav', null, null, 1500],
      ['audio', 'audio/flac', null, null, 2000],
      ['audio', 'audio/mpeg', null, null, expect.any(Number)],
      ['audio', 'audio/ogg', null, null, 900],
      ['audio', 'audio/mp4', null, null, 3000],
    ]);
    for (const [i, r] of rows.entries()) {
      expect(r.position).toBe(i);
      expect(r.revision).toBe(0);
      expect(r.r_revision).toBe(0);
      expect(r.source).toBe('initial');
      expect(r.annotation_page).toEqual(emptyAnnotationPage(r.canvas_uri));
      expect(r.size_bytes).toBe(files[i]!.length);
    }
    const item = await db.pool.query(
      'SELECT external_reference_id, metadata FROM items WHERE id = $1',
      ['register-1901'],
    );
    expect(item.rows[0]).toEqual({ external_reference_id: 'ext-42', metadata: { shelf: 'B7' } });
    const cleanups = await db.pool.query('SELECT DISTINCT status FROM blob_cleanups');
    expect(cleanups.rows).toEqual([{ status: 'retired' }]);
    const total = files.reduce((s, f) => s + f.length, 0);
    expect(await workspaceUsageBytes(db.pool, ws)).toBe(total);
    expect((await filesUnder(blobDir)).length).toBe(files.length);
    const usage = await blobUsage(db.pool);
    expect(usage).toMatchObject({
      totalBytes: total,
      pendingCleanups: 0,
      failedCleanups: 0,
      oldestPendingCleanupAgeMs: null,
    });
  });

  it('U2 one item per file, and pages appended to an existing item keep their order', async () => {
    const perFile = await ingestBatch(
      deps,
      ws,
      uploadRequest([{ name: 'mode', value: 'perFile' }, file(png(2, 2)), file(wav(100))]),
    );
    expect(new Set(perFile.pages.map((p) => p.itemId)).size).toBe(2);
    const first = await ingestBatch(
      deps,
      ws,
      uploadRequest([{ name: 'itemId', value: 'book' }, file(png(2, 2))]),
    );
    const second = await ingestBatch(
      deps,
      ws,
      uploadRequest([{ name: 'itemId', value: 'book' }, file(png(3, 3))]),
    );
    const { rows } = await db.pool.query(
      'SELECT id, position FROM pages WHERE item_id = $1 ORDER BY position',
      ['book'],
    );
    expect(rows.map((r) => r.id)).toEqual([first.pages[0]!.pageId, second.pages[0]!.pageId]);
  });

  it.each([
    ['small chunks', 8192],
    ['one chunk read far ahead of the parser', 1 << 30],
  ])(
    'U2 reservations cover every file of a multi-file body streamed in %s',
    async (_label, chunkSize) => {
      const files = [wav(20_000), wav(15_000), png(300, 200), wav(18_000)];
      const whole = new Uint8Array(await uploadRequest(files.map((f) => file(f))).arrayBuffer());
      let offset = 0;
      const body = new ReadableStream<Uint8Array>({
        pull(controller) {
          if (offset >= whole.length) return controller.close();
          controller.enqueue(whole.slice(offset, offset + chunkSize));
          offset += chunkSize;
        },
      });
      const request = new Request('http://x/', {
        method: 'POST',
        headers: {
          'content-type': 'multipart/form-data; boundary=----quire-test-boundary-7c1d',
          'content-length': String(whole.length),
        },
        body,
        duplex: 'half',
      } as RequestInit);
      const result = await ingestBatch(deps, ws, request);
      expect(result.pages).toHaveLength(4);
      const { rows } = await db.pool.query('SELECT size_bytes FROM blobs');
      expect(rows.map((r) => r.size_bytes).sort()).toEqual(files.map((f) => f.length).sort());
      expect(await workspaceUsageBytes(db.pool, ws)).toBe(files.reduce((s, f) => s + f.length, 0));
    },
  );

  it('§7 the caller creates jobs in the same transaction; their ids are returned', async () => {
    const result = await ingestBatch(
      {
        ...deps,
        createJobs: async (tx, pages) => {
          const { rows } = await tx.query(
            'SELECT count(*)::int AS n FROM pages WHERE id = ANY($1::bigint[])',
            [pages.map((p) => p.pageId)],
          );
          expect(rows[0].n).toBe(pages.length);
          return pages.map((p) => ({ pageId: p.pageId, jobId: `job-${p.pageId}` }));
        },
      },
      ws,
      uploadRequest([file(png(2, 2)), file(flac(1000))]),
    );
    expect(result.pages.map((p) => p.jobId)).toEqual(result.pages.map((p) => `job-${p.pageId}`));
  });

  it('§7 a retried request with the same idempotency key creates nothing new and returns the same result', async () => {
    const parts = [{ name: 'idempotencyKey', value: 'upload-7' }, file(png(5, 5)), file(wav(200))];
    const first = await ingestBatch(deps, ws, uploadRequest(parts));
    const before = { rows: await rowCounts(), files: await filesUnder(blobDir) };
    const again = await ingestBatch(deps, ws, uploadRequest(parts));
    expect(again).toEqual(first);
    expect(await rowCounts()).toEqual(before.rows);
    expect(await filesUnder(blobDir)).toEqual(before.files);
    // The key in a header works the same, and a key that comes after the files too.
    const viaHeader = await ingestBatch(
      deps,
      ws,
      uploadRequest([file(png(5, 5))], { 'idempotency-key': 'upload-7' }),
    );
    expect(viaHeader).toEqual(first);
    const late = await ingestBatch(
      deps,
      ws,
      uploadRequest([file(png(5, 5)), { name: 'idempotencyKey', value: 'upload-7' }]),
    );
    expect(late).toEqual(first);
    expect(await rowCounts()).toEqual(before.rows);
    expect(await filesUnder(blobDir)).toEqual(before.files);
  });

  it('§7 concurrent requests with one idempotency key make one batch', async () => {
    const parts = [{ name: 'idempotencyKey', value: 'race' }, file(png(5, 5))];
    const results = await Promise.all(
      [1, 2, 3, 4].map(() => ingestBatch(deps, ws, uploadRequest(parts))),
    );
    for (const r of results) expect(r).toEqual(results[0]);
    expect((await rowCounts())?.batches).toBe(1);
    expect((await filesUnder(blobDir)).length).toBe(1);
    expect(await workspaceUsageBytes(db.pool, ws)).toBe(png(5, 5).length);
  });
});

// A bad file alone; beside good files it is refused alone and they are stored (I9,
// test/integration/documents.test.ts and below).
describe('U4 bad uploads are refused with a clear code and store nothing', () => {
  const limits = {
    maxFiles: 3,
    maxFileBytes: 4096,
    maxRequestBytes: 64 * 1024,
    maxMetadataBytes: 256,
    maxAudioDurationMs: 60_000,
  };
  const cases: Array<[string, Part[], string, number]> = [
    [
      'unsupported type',
      [file(Buffer.from('just some text, not media'))],
      'unsupported_media_type',
      415,
    ],
    ['empty file', [file(Buffer.alloc(0))], 'empty_file', 422],
    [
      'decompression bomb',
      [file(png(1, 1, { width: 50_000, height: 50_000 }))],
      'image_too_large',
      422,
    ],
    ['recording too long', [file(flac(61_000))], 'audio_too_long', 422],
    ['truncated header', [file(tiff(4, 4, 10).subarray(0, 12))], 'malformed_media', 422],
    ['file too large', [file(wav(1000))], 'file_too_large', 413],
    [
      'too many files',
      [file(png(2, 2)), file(png(2, 2)), file(png(2, 2)), file(png(2, 2))],
      'too_many_files',
      413,
    ],
    [
      'metadata too large',
      [{ name: 'metadata', value: JSON.stringify({ a: 'x'.repeat(300) }) }, file(png(2, 2))],
      'metadata_too_large',
      413,
    ],
    [
      'metadata not an object',
      [file(png(2, 2)), { name: 'metadata', value: '[1,2]' }],
      'invalid_metadata',
      422,
    ],
    ['bad mode', [file(png(2, 2)), { name: 'mode', value: 'many' }], 'invalid_field', 422],
    ['unknown field', [file(png(2, 2)), { name: 'password', value: 'x' }], 'unexpected_field', 400],
    ['no files', [{ name: 'itemId', value: 'x' }], 'no_files', 400],
    [
      'file in the wrong field',
      [{ name: 'upload', value: png(2, 2), filename: 'a.png' }],
      'unexpected_field',
      400,
    ],
  ];
  it.each(cases)('U4 %s', async (_label, parts, code, status) => {
    const refused = await refusal(parts, {}, { limits });
    expect(refused.status).toBe(status);
    expect(refused.body.error.code).toBe(code);
    expect(refused.body.error.message).not.toMatch(/just some text/);
    await expectNothingStored();
  });

  it('U4 a request above the byte limit is refused (413) and stores nothing', async () => {
    const refused = await refusal(
      [file(png(2, 2)), file(wav(600))],
      {},
      { limits: { maxRequestBytes: 5000 } },
    );
    expect([refused.status, refused.body.error.code]).toEqual([413, 'request_too_large']);
    // Without a declared length the running count catches it.
    const big = uploadRequest([file(png(2, 2)), file(wav(600)), file(wav(600))]);
    const chunked = new Request(big.url, {
      method: 'POST',
      headers: { 'content-type': big.headers.get('content-type')! },
      body: big.body,
      duplex: 'half',
    } as RequestInit);
    await expect(
      ingestBatch({ ...deps, limits: { maxRequestBytes: 12_000 } }, ws, chunked).catch(withStatus),
    ).resolves.toMatchObject({
      code: 'request_too_large',
      status: 413,
    });
    await expectNothingStored();
  });

  it('U4 not multipart, or a truncated body, is refused and stores nothing', async () => {
    await expect(
      ingestBatch(
        deps,
        ws,
        new Request('http://x/', {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: '{}',
        }),
      ).catch(withStatus),
    ).resolves.toMatchObject({ code: 'invalid_content_type', status: 415 });
    const whole = await uploadRequest([file(png(2, 2)), file(wav(300))]).arrayBuffer();
    const truncated = new Request('http://x/', {
      method: 'POST',
      headers: { 'content-type': 'multipart/form-data; boundary=----quire-test-boundary-7c1d' },
      body: new Uint8Array(whole).subarray(0, whole.byteLength - 300),
    });
    await expect(ingestBatch(deps, ws, truncated)).rejects.toBeInstanceOf(IngestError);
    await expectNothingStored();
  });
});

describe('U2 quota', () => {
  it('U2 over the workspace quota: typed quota_exceeded (429) and nothing stored', async () => {
    const small = await newWorkspace(png(8, 8).length + 10);
    await ingestBatch(deps, small, uploadRequest([file(png(8, 8))]));
    const countsBefore = await rowCounts();
    const filesBefore = await filesUnder(blobDir);
    let caught: unknown;
    try {
      await ingestBatch(deps, small, uploadRequest([file(png(8, 8))]));
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(QuotaExceededError);
    expect(withStatus(caught)).toMatchObject({
      code: 'quota_exceeded',
      status: 429,
      scope: 'workspace',
    });
    expect(httpErrorOf(caught)).toMatchObject({
      status: 429,
      body: { error: { code: 'quota_exceeded' } },
    });
    expect(await rowCounts()).toEqual(countsBefore);
    expect(await filesUnder(blobDir)).toEqual(filesBefore);
    expect(await workspaceUsageBytes(db.pool, small)).toBe(png(8, 8).length);
  });

  it('U2 over the global quota (settings row, or the configured fallback): quota_exceeded and nothing stored', async () => {
    await db.pool.query(`INSERT INTO settings (key, value) VALUES ('global_quota_bytes', '100')`);
    await expect(ingestBatch(deps, ws, uploadRequest([file(wav(100))]))).rejects.toMatchObject({
      code: 'quota_exceeded',
      scope: 'global',
    });
    await db.pool.query('DELETE FROM settings');
    await expect(
      ingestBatch({ ...deps, globalQuotaBytes: 100 }, ws, uploadRequest([file(wav(100))])),
    ).rejects.toMatchObject({ code: 'quota_exceeded', scope: 'global' });
    await expectNothingStored();
  });
});
