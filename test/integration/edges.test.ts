import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { parseConfig } from '../../core/config';
import { MAX_PAGE_TEXT_BYTES } from '../../core/text';
import { auditInvariants } from '../../db/audit';
import { createWorkspace } from '../../db/workspaces';
import { configureWeb } from '../../web/lib/server';
import { type CallOptions, call, type RouteModule } from '../support/api';
import { createTestQuire, type TestQuire, temporalAddress } from '../support/quire';
import { multipartBody, type Part, png } from '../support/uploadFixtures';

/**
 * R6: inputs that used to answer 500 (a NUL or lone surrogate anywhere, a doubly decoded id,
 * more text than the search index holds, hostile transcript files) are 400, 413 or 422 with a
 * stable code, logged by code without the input, and change nothing. One table drives every
 * route the defects were found on, through the route handlers as Next calls them (path
 * parameters arrive decoded once, as Next passes them), against real PostgreSQL and Temporal.
 */
let quire: TestQuire;
let blobDir: string;
let A: { ws: number; key: string };
let pageId: number;
const logs: string[] = [];
const R: Record<string, RouteModule> = {};
const ROUTES = {
  batches: 'batches/route',
  batchCancel: 'batches/[batchId]/cancel/route',
  jobs: 'transcription-jobs/route',
  job: 'transcription-jobs/[jobId]/route',
  jobCancel: 'transcription-jobs/[jobId]/cancel/route',
  page: 'pages/[pageId]/route',
  search: 'search/route',
  webhooks: 'webhooks/route',
  webhook: 'webhooks/[webhookId]/route',
  item: 'items/[itemId]/route',
  itemPages: 'items/[itemId]/pages/route',
  // Outside the API: IIIF lives at /iiif/{ws}/{item}/...
  manifest: '/iiif/[ws]/[item]/manifest/route',
  canvas: '/iiif/[ws]/[item]/canvas/[pageId]/route',
} as const;

const BOUNDARY = '----quire-test-boundary-7c1d';
/** A marker in every refused text: it must never reach a log line. */
const MARK = 'refused-text-marker';

beforeAll(async () => {
  quire = await createTestQuire();
  blobDir = mkdtempSync(join(tmpdir(), 'quire-edges-'));
  configureWeb(
    parseConfig({
      DATABASE_URL: quire.db.url,
      TEMPORAL_ADDRESS: temporalAddress(),
      QUIRE_TASK_QUEUE: quire.config.QUIRE_TASK_QUEUE,
      QUIRE_SECRET_KEY: quire.config.QUIRE_SECRET_KEY,
      QUIRE_BLOB_DIR: blobDir,
      QUIRE_DEFAULT_PROVIDER: 'simulated',
      QUIRE_ENABLE_SIMULATED: '1',
      QUIRE_WEBHOOK_ALLOW_HOSTS: 'localhost',
    }),
  );
  for (const level of ['log', 'info', 'warn', 'error', 'debug'] as const) {
    vi.spyOn(console, level).mockImplementation((...args: unknown[]) => {
      logs.push(args.map((a) => (typeof a === 'string' ? a : JSON.stringify(a))).join(' '));
    });
  }
  for (const [name, path] of Object.entries(ROUTES)) {
    R[name] = await import(
      path.startsWith('/') ? `../../web/app${path}` : `../../web/app/api/v1/workspaces/[ws]/${path}`
    );
  }
  const a = await createWorkspace(quire.db.pool, 'Edges');
  A = { ws: a.workspace.id, key: a.apiKey };
  // What the table's routes must leave alone, made through the API: no worker runs, so the job
  // waits, and the webhook stays subscribed.
  const upload = await call(R.batches!, 'POST', `/workspaces/${A.ws}/batches`, ws(), {
    key: A.key,
    rawBody: new Uint8Array(
      multipartBody([
        { name: 'itemId', value: 'register-1' },
        { name: 'files[]', value: png(40, 30), filename: 'p1.png' },
      ]),
    ),
    contentType: `multipart/form-data; boundary=${BOUNDARY}`,
  });
  expect(upload.status).toBe(201);
  pageId = upload.json.pages[0].pageId;
  const hook = await call(R.webhooks!, 'POST', `/workspaces/${A.ws}/webhooks`, ws(), {
    key: A.key,
    body: {
      url: 'https://localhost:9443/hook',
      secret: 'a-webhook-secret-of-at-least-thirty-two-bytes',
    },
  });
  expect(hook.status).toBe(201);
}, 120_000);

afterEach(async () => {
  expect(await auditInvariants(quire.db.pool)).toEqual([]);
});

afterAll(async () => {
  const { pool } = await import('../../web/lib/server');
  await pool().end();
  vi.restoreAllMocks();
  await quire?.close();
  rmSync(blobDir, { recursive: true, force: true });
});

function ws(extra: Record<string, string> = {}): Record<string, string> {
  return { ws: String(A.ws), ...extra };
}

/** Everything a refused request must leave as it was. */
async function state() {
  const { rows } = await quire.db.pool.query(
    `SELECT (SELECT count(*)::int FROM batches) AS batches,
            (SELECT count(*)::int FROM items WHERE deleted_at IS NULL) AS items,
            (SELECT count(*)::int FROM pages WHERE deleted_at IS NULL) AS pages,
            (SELECT count(*)::int FROM page_revisions) AS revisions,
            (SELECT count(*)::int FROM transcription_jobs) AS jobs,
            (SELECT count(*)::int FROM transcription_jobs WHERE status = 'canceled') AS canceled,
            (SELECT count(*)::int FROM webhook_subscriptions) AS webhooks,
            (SELECT count(*)::int FROM blobs) AS blobs`,
  );
  return rows[0];
}

function json(body: string): CallOptions {
  return { rawBody: body, contentType: 'application/json' };
}

function multipart(parts: Part[]): CallOptions {
  return {
    rawBody: new Uint8Array(multipartBody(parts)),
    contentType: `multipart/form-data; boundary=${BOUNDARY}`,
  };
}

const image = (): Part => ({ name: 'files[]', value: png(100, 100), filename: 'p.png' });
const transcript = (xml: string): Part => ({
  name: 'transcript',
  value: Buffer.from(xml),
  filename: 'p.xml',
});

function alto(inner: string, lang = ''): string {
  return `<?xml version="1.0" encoding="UTF-8"?>
<alto xmlns="http://www.loc.gov/standards/alto/ns-v4#"><Layout><Page WIDTH="100" HEIGHT="100"><PrintSpace><TextBlock ID="b"${lang}>${inner}</TextBlock></PrintSpace></Page></Layout></alto>`;
}

const altoLine = (content: string) =>
  `<TextLine HPOS="1" VPOS="1" WIDTH="10" HEIGHT="10"><String CONTENT="${content}"/></TextLine>`;

function pageXml(points: string, release = '2019-07-15'): string {
  return `<?xml version="1.0" encoding="UTF-8"?>
<PcGts xmlns="http://schema.primaresearch.org/PAGE/gts/pagecontent/${release}"><Page imageWidth="100" imageHeight="100"><TextRegion id="r"><TextLine id="l"><Coords points="${points}"/><TextEquiv><Unicode>x</Unicode></TextEquiv></TextLine></TextRegion></Page></PcGts>`;
}

/** 200 lines of 19,000 characters, every word distinct: within the per-line and body limits. */
function distinctWordLines(count: number, chars: number): Array<Record<string, unknown>> {
  let n = 0;
  return Array.from({ length: count }, (_, index) => {
    let text = '';
    while (text.length < chars - 12) text += `${(n++).toString(36)}q `;
    return { index, target: { kind: 'xywh', box: { x: 0, y: 0, w: 10, h: 10 } }, text };
  });
}

interface Case {
  /** The requirement the case proves (R6 unless named). */
  spec?: string;
  name: string;
  route: keyof typeof ROUTES;
  method: string;
  path: () => string;
  params: () => Record<string, string>;
  options?: () => CallOptions;
  headers?: Record<string, string>;
  status: number;
  code: string;
}

const NUL = '\u0000';
/** X5: JSON 6,000 levels deep (a stack overflow once the parsed value is walked). */
const DEEP = `${'['.repeat(6_000)}"${MARK}"${']'.repeat(6_000)}`;
const cases: Case[] = [
  {
    spec: 'X5',
    name: 'POST transcription-jobs with options nested 6,000 deep',
    route: 'jobs',
    method: 'POST',
    path: () => `/workspaces/${A.ws}/transcription-jobs`,
    params: () => ws(),
    options: () => json(`{"pageId":${pageId},"options":{"simulated":${DEEP}}}`),
    status: 400,
    code: 'json_too_deep',
  },
  {
    spec: 'X5',
    name: 'POST batches with metadata nested 6,000 deep',
    route: 'batches',
    method: 'POST',
    path: () => `/workspaces/${A.ws}/batches`,
    params: () => ws(),
    options: () => multipart([{ name: 'metadata', value: `{"a":${DEEP}}` }, image()]),
    status: 400,
    code: 'json_too_deep',
  },
  {
    spec: 'X5',
    name: 'POST transcription-jobs with an option Quire does not know',
    route: 'jobs',
    method: 'POST',
    path: () => `/workspaces/${A.ws}/transcription-jobs`,
    params: () => ws(),
    options: () => json(`{"pageId":${pageId},"options":{"polish":true}}`),
    status: 422,
    code: 'unknown_option',
  },
  {
    name: 'search?q=a%00b',
    route: 'search',
    method: 'GET',
    path: () => `/workspaces/${A.ws}/search?q=a%00b`,
    params: () => ws(),
    status: 400,
    code: 'invalid_query',
  },
  {
    name: 'search?q= with a lone surrogate (%ED%A0%80 decodes to U+FFFD; the raw code unit)',
    route: 'search',
    method: 'GET',
    path: () => `/workspaces/${A.ws}/search?${new URLSearchParams({ q: 'a\uD800b' })}`,
    params: () => ws(),
    status: 200,
    code: '',
  },
  {
    name: 'GET transcription-jobs/a%00b',
    route: 'job',
    method: 'GET',
    path: () => `/workspaces/${A.ws}/transcription-jobs/a%00b`,
    params: () => ws({ jobId: `a${NUL}b` }),
    status: 400,
    code: 'invalid_path',
  },
  {
    name: 'POST transcription-jobs/a%00b/cancel',
    route: 'jobCancel',
    method: 'POST',
    path: () => `/workspaces/${A.ws}/transcription-jobs/a%00b/cancel`,
    params: () => ws({ jobId: `a${NUL}b` }),
    status: 400,
    code: 'invalid_path',
  },
  {
    name: 'POST batches/a%00b/cancel',
    route: 'batchCancel',
    method: 'POST',
    path: () => `/workspaces/${A.ws}/batches/a%00b/cancel`,
    params: () => ws({ batchId: `a${NUL}b` }),
    status: 400,
    code: 'invalid_path',
  },
  {
    name: 'GET webhooks/a%00b',
    route: 'webhook',
    method: 'GET',
    path: () => `/workspaces/${A.ws}/webhooks/a%00b`,
    params: () => ws({ webhookId: `a${NUL}b` }),
    status: 400,
    code: 'invalid_path',
  },
  {
    name: 'DELETE webhooks/a%00b',
    route: 'webhook',
    method: 'DELETE',
    path: () => `/workspaces/${A.ws}/webhooks/a%00b`,
    params: () => ws({ webhookId: `a${NUL}b` }),
    status: 400,
    code: 'invalid_path',
  },
  {
    name: 'DELETE items/a%00b',
    route: 'item',
    method: 'DELETE',
    path: () => `/workspaces/${A.ws}/items/a%00b`,
    params: () => ws({ itemId: `a${NUL}b` }),
    status: 400,
    code: 'invalid_path',
  },
  {
    name: 'DELETE items/%25E0%25A4%25A (decoded once by Next, not valid percent-encoding)',
    route: 'item',
    method: 'DELETE',
    path: () => `/workspaces/${A.ws}/items/%25E0%25A4%25A`,
    params: () => ws({ itemId: '%E0%A4%A' }),
    status: 400,
    code: 'invalid_path',
  },
  {
    name: 'DELETE items/%2500 (a NUL once decoded twice)',
    route: 'item',
    method: 'DELETE',
    path: () => `/workspaces/${A.ws}/items/%2500`,
    params: () => ws({ itemId: '%00' }),
    status: 400,
    code: 'invalid_path',
  },
  {
    name: 'GET iiif/{ws}/a%00b/manifest',
    route: 'manifest',
    method: 'GET',
    path: () => `/iiif/${A.ws}/a%00b/manifest`,
    params: () => ws({ item: `a${NUL}b` }),
    status: 400,
    code: 'invalid_path',
  },
  {
    name: 'GET iiif/{ws}/%2500/canvas/{pageId} (a NUL once decoded twice)',
    route: 'canvas',
    method: 'GET',
    path: () => `/iiif/${A.ws}/%2500/canvas/${pageId}`,
    params: () => ws({ item: '%00', pageId: String(pageId) }),
    status: 400,
    code: 'invalid_path',
  },
  {
    name: 'POST transcription-jobs with \\u0000 in metadata',
    route: 'jobs',
    method: 'POST',
    path: () => `/workspaces/${A.ws}/transcription-jobs`,
    params: () => ws(),
    options: () => json(`{"pageId":${pageId},"metadata":{"note":"${MARK}\\u0000"}}`),
    status: 400,
    code: 'invalid_text',
  },
  {
    name: 'POST transcription-jobs with a lone surrogate in metadata',
    route: 'jobs',
    method: 'POST',
    path: () => `/workspaces/${A.ws}/transcription-jobs`,
    params: () => ws(),
    options: () => json(`{"pageId":${pageId},"metadata":{"note":"${MARK}\\ud800"}}`),
    status: 400,
    code: 'invalid_text',
  },
  {
    name: 'POST transcription-jobs with \\u0000 in externalReferenceId',
    route: 'jobs',
    method: 'POST',
    path: () => `/workspaces/${A.ws}/transcription-jobs`,
    params: () => ws(),
    options: () => json(`{"pageId":${pageId},"externalReferenceId":"${MARK}\\u0000"}`),
    status: 400,
    code: 'invalid_text',
  },
  {
    name: 'POST transcription-jobs with a lone surrogate in externalReferenceId',
    route: 'jobs',
    method: 'POST',
    path: () => `/workspaces/${A.ws}/transcription-jobs`,
    params: () => ws(),
    options: () => json(`{"pageId":${pageId},"externalReferenceId":"${MARK}\\udfff"}`),
    status: 400,
    code: 'invalid_text',
  },
  {
    name: "PUT a page with \\u0000 in a segment's text",
    route: 'page',
    method: 'PUT',
    path: () => `/workspaces/${A.ws}/pages/${pageId}`,
    params: () => ws({ pageId: String(pageId) }),
    headers: { 'if-match': '"0"' },
    options: () =>
      json(
        `{"segments":[{"index":0,"target":{"kind":"xywh","box":{"x":0,"y":0,"w":1,"h":1}},"text":"${MARK}\\u0000"}]}`,
      ),
    status: 400,
    code: 'invalid_text',
  },
  {
    name: "PUT a page with a lone surrogate in a segment's text",
    route: 'page',
    method: 'PUT',
    path: () => `/workspaces/${A.ws}/pages/${pageId}`,
    params: () => ws({ pageId: String(pageId) }),
    headers: { 'if-match': '"0"' },
    options: () =>
      json(
        `{"segments":[{"index":0,"target":{"kind":"xywh","box":{"x":0,"y":0,"w":1,"h":1}},"text":"${MARK}\\ud83d"}]}`,
      ),
    status: 400,
    code: 'invalid_text',
  },
  {
    name: 'PUT 200 segments of 19,000 distinct-word characters',
    route: 'page',
    method: 'PUT',
    path: () => `/workspaces/${A.ws}/pages/${pageId}`,
    params: () => ws({ pageId: String(pageId) }),
    headers: { 'if-match': '"0"' },
    options: () => json(JSON.stringify({ segments: distinctWordLines(200, 19_000) })),
    status: 413,
    code: 'page_text_too_large',
  },
  {
    name: 'an upload with NUL in metadata',
    route: 'batches',
    method: 'POST',
    path: () => `/workspaces/${A.ws}/batches`,
    params: () => ws(),
    options: () => multipart([{ name: 'metadata', value: `{"note":"${MARK}\\u0000"}` }, image()]),
    status: 400,
    code: 'invalid_text',
  },
  {
    name: 'an upload with a NUL byte in externalReferenceId',
    route: 'batches',
    method: 'POST',
    path: () => `/workspaces/${A.ws}/batches`,
    params: () => ws(),
    options: () => multipart([{ name: 'externalReferenceId', value: `${MARK}${NUL}` }, image()]),
    status: 400,
    code: 'invalid_text',
  },
  {
    name: 'an upload whose transcript has a 150,000-point polygon',
    route: 'batches',
    method: 'POST',
    path: () => `/workspaces/${A.ws}/batches`,
    params: () => ws(),
    options: () =>
      multipart([
        image(),
        transcript(
          pageXml(Array.from({ length: 150_000 }, (_, i) => `${i % 90},${i % 80}`).join(' ')),
        ),
      ]),
    status: 413,
    code: 'transcript_too_large',
  },
  {
    name: 'an upload whose transcript nests 101 elements',
    route: 'batches',
    method: 'POST',
    path: () => `/workspaces/${A.ws}/batches`,
    params: () => ws(),
    options: () =>
      multipart([image(), transcript(alto(`${'<x>'.repeat(101)}${'</x>'.repeat(101)}`))]),
    status: 422,
    code: 'transcript_too_deep',
  },
  {
    name: 'an upload whose transcript has an element named __proto__',
    route: 'batches',
    method: 'POST',
    path: () => `/workspaces/${A.ws}/batches`,
    params: () => ws(),
    options: () =>
      multipart([image(), transcript(alto(`<__proto__>${altoLine('a')}</__proto__>`))]),
    status: 422,
    code: 'transcript_reserved_name',
  },
  {
    name: 'an upload whose ALTO language is 200,000 characters',
    route: 'batches',
    method: 'POST',
    path: () => `/workspaces/${A.ws}/batches`,
    params: () => ws(),
    options: () =>
      multipart([
        image(),
        transcript(alto(altoLine(MARK), ` LANG="de-${'abcdefgh-'.repeat(22_222)}x1"`)),
      ]),
    status: 422,
    code: 'transcript_invalid_language',
  },
  {
    name: 'an upload whose ALTO has a 7 MB line',
    route: 'batches',
    method: 'POST',
    path: () => `/workspaces/${A.ws}/batches`,
    params: () => ws(),
    options: () =>
      multipart([image(), transcript(alto(altoLine(`${MARK}${'w'.repeat(7 * 1024 * 1024)}`)))]),
    status: 422,
    code: 'transcript_line_too_long',
  },
  {
    name: 'an upload whose PAGE namespace is 1 MB',
    route: 'batches',
    method: 'POST',
    path: () => `/workspaces/${A.ws}/batches`,
    params: () => ws(),
    options: () =>
      multipart([
        image(),
        transcript(pageXml('1,1 9,1 9,9 1,9', `2019-07-15/${'x'.repeat(1024 * 1024)}`)),
      ]),
    status: 422,
    code: 'transcript_invalid_namespace',
  },
  {
    name: 'an upload with itemId ..',
    route: 'batches',
    method: 'POST',
    path: () => `/workspaces/${A.ws}/batches`,
    params: () => ws(),
    options: () => multipart([{ name: 'itemId', value: '..' }, image()]),
    status: 422,
    code: 'invalid_field',
  },
  {
    name: 'PUT items/%2E%2E/pages (an item made by arranging pages)',
    route: 'itemPages',
    method: 'PUT',
    path: () => `/workspaces/${A.ws}/items/%2E%2E/pages`,
    params: () => ws({ itemId: '..' }),
    options: () => json(`{"pageIds":[${pageId}]}`),
    status: 422,
    code: 'invalid_item_id',
  },
  {
    name: 'an upload with itemId .',
    route: 'batches',
    method: 'POST',
    path: () => `/workspaces/${A.ws}/batches`,
    params: () => ws(),
    options: () => multipart([{ name: 'itemId', value: '.' }, image()]),
    status: 422,
    code: 'invalid_field',
  },
];

describe('R6 text and ids that used to answer 500', () => {
  for (const c of cases.filter((k) => k.status !== 200)) {
    it(`${c.spec ?? 'R6'} ${c.name} is ${c.status} ${c.code}, logged without the input, and changes nothing`, async () => {
      const before = await state();
      const from = logs.length;
      const options = { key: A.key, ...(c.options?.() ?? {}) };
      if (c.headers) options.headers = { ...options.headers, ...c.headers };
      const response = await call(R[c.route]!, c.method, c.path(), c.params(), options);
      expect({ status: response.status, code: response.json?.error?.code }).toEqual({
        status: c.status,
        code: c.code,
      });
      expect(response.text).not.toContain(MARK);
      // X5: an unknown option is refused by its name.
      if (c.code === 'unknown_option') expect(response.json.error.message).toContain('polish');
      expect(await state()).toEqual(before);
      const written = logs.slice(from);
      expect(written.some((l) => l.includes('request refused') && l.includes(`"${c.code}"`))).toBe(
        true,
      );
      for (const line of written) {
        expect(line).not.toContain(MARK);
        expect(line).not.toContain('"internal"');
      }
    }, 60_000);
  }

  it('R6 a lone surrogate sent in a query string arrives as U+FFFD and searches normally', async () => {
    const c = cases.find((k) => k.status === 200)!;
    const response = await call(R[c.route]!, c.method, c.path(), c.params(), { key: A.key });
    expect(response.status).toBe(200);
    expect(response.json.hits).toEqual([]);
  });
});

describe('R6 every accepted text fits the search index', () => {
  /** Worst cases for the tsvector: all words distinct, short, multi-byte, hyphenated. */
  function worstCaseLines(bytes: number): Array<Record<string, unknown>> {
    const words: string[] = [];
    let total = 0;
    let n = 0;
    for (let cp = 0x4e00; cp <= 0x9fff && total < bytes / 2; cp++) {
      const word = String.fromCodePoint(cp);
      words.push(word);
      total += Buffer.byteLength(word) + 1;
    }
    for (; total < bytes - 40; n++) {
      const word = n % 2 ? `${n.toString(36)}-${(n * 7).toString(36)}` : n.toString(36);
      words.push(word);
      total += Buffer.byteLength(word) + 1;
    }
    const lines: Array<Record<string, unknown>> = [];
    for (let i = 0; i < words.length; i += 1000) {
      lines.push({
        index: lines.length,
        target: { kind: 'xywh', box: { x: 0, y: 0, w: 10, h: 10 } },
        text: words.slice(i, i + 1000).join(' '),
      });
    }
    return lines;
  }

  it('R6 a page edited up to the text limit with the worst words for the index is saved and found by search', async () => {
    const upload = await call(R.batches!, 'POST', `/workspaces/${A.ws}/batches`, ws(), {
      key: A.key,
      ...multipart([image()]),
    });
    expect(upload.status).toBe(201);
    const target = upload.json.pages[0].pageId as number;
    const segments = worstCaseLines(MAX_PAGE_TEXT_BYTES);
    const edit = await call(
      R.page!,
      'PUT',
      `/workspaces/${A.ws}/pages/${target}`,
      ws({ pageId: String(target) }),
      { key: A.key, body: { segments }, headers: { 'if-match': '"0"' } },
    );
    expect(edit.status).toBe(200);
    const last = String(segments.at(-1)!.text).split(' ').at(-1)!.split('-')[0]!;
    for (const q of ['丁', last]) {
      const search = await call(
        R.search!,
        'GET',
        `/workspaces/${A.ws}/search?${new URLSearchParams({ q })}`,
        ws(),
        { key: A.key },
      );
      expect(search.status).toBe(200);
      expect(search.json.hits.map((h: { pageId: number }) => h.pageId)).toContain(target);
    }
  }, 60_000);
});
