import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { parseConfig, type QuireConfig } from '../../core/config';
import { buildSnapshot } from '../../core/pricing';
import { auditInvariants } from '../../db/audit';
import { positionOf } from '../../db/events';
import { cancelJob, createJob } from '../../db/jobs';
import { getMirrorRow } from '../../db/mirrorOutbox';
import { upsertMirrorRow } from '../../db/pages';
import { withTransaction } from '../../db/pool';
import { fanOutEvents, recordDeliveryAttempt } from '../../db/webhooks';
import { addApiKey, createWorkspace } from '../../db/workspaces';
import { configureWeb } from '../../web/lib/server';
import type { QuireWorker } from '../../worker/createWorker';
import { deliverMirrorOutbox } from '../../worker/mirrorRelay';
import { call, type RouteModule, request, SseReader, seenBodies } from '../support/api';
import { createTestQuire, eventually, type TestQuire, temporalAddress } from '../support/quire';
import { commitEvent } from '../support/webhookFixtures';

/**
 * The HTTP API of SPEC §7, called in-process through the route modules, against a real
 * Postgres database, a real Temporal dev server and a real worker.
 */
let quire: TestQuire;
let worker: QuireWorker;
let running: Promise<void>;
let stopWorker: () => void;
let A: { ws: number; key: string };
let B: { ws: number; key: string };
const logs: string[] = [];
const webhookSecrets: string[] = [];

const R: Record<string, RouteModule> = {};
const ROUTES = {
  jobs: 'transcription-jobs/route',
  job: 'transcription-jobs/[jobId]/route',
  jobCancel: 'transcription-jobs/[jobId]/cancel/route',
  page: 'pages/[pageId]/route',
  revisions: 'pages/[pageId]/revisions/route',
  revision: 'pages/[pageId]/revisions/[revision]/route',
  exportPage: 'pages/[pageId]/export/route',
  publish: 'pages/[pageId]/publish/route',
  search: 'search/route',
  webhooks: 'webhooks/route',
  webhook: 'webhooks/[webhookId]/route',
  deliveries: 'webhooks/[webhookId]/deliveries/route',
  replay: 'webhooks/[webhookId]/deliveries/[deliveryId]/replay/route',
  events: 'events/route',
  providers: 'providers/route',
  resume: 'providers/[name]/resume/route',
} as const;

let closeEventHub: () => Promise<void>;
let webConfig: QuireConfig;

beforeAll(async () => {
  quire = await createTestQuire();
  // The web app's handles are made from its configuration at first use: hand it this test's
  // database and task queue before any request.
  webConfig = parseConfig({
    DATABASE_URL: quire.db.url,
    TEMPORAL_ADDRESS: temporalAddress(),
    QUIRE_TASK_QUEUE: quire.config.QUIRE_TASK_QUEUE,
    QUIRE_SECRET_KEY: quire.config.QUIRE_SECRET_KEY,
    QUIRE_DEFAULT_PROVIDER: 'simulated',
    QUIRE_ENABLE_SIMULATED: '1',
    QUIRE_RETRY_INITIAL_MS: '50',
    QUIRE_RETRY_MAX_MS: '200',
    QUIRE_SSE_MAX_STREAMS_PER_KEY: '3',
    QUIRE_SSE_HEARTBEAT_MS: '300',
    QUIRE_SSE_CHECKPOINT_MS: '0',
    QUIRE_SSE_POLL_MS: '200',
  });
  configureWeb(webConfig);
  for (const level of ['log', 'info', 'warn', 'error', 'debug'] as const) {
    vi.spyOn(console, level).mockImplementation((...args: unknown[]) => {
      logs.push(args.map((a) => (typeof a === 'string' ? a : JSON.stringify(a))).join(' '));
    });
  }
  for (const [name, path] of Object.entries(ROUTES)) {
    R[name] = await import(`../../web/app/api/v1/workspaces/[ws]/${path}`);
  }
  ({ closeEventHub } = await import('../../web/lib/eventStream'));
  const a = await createWorkspace(quire.db.pool, 'Archive A');
  const b = await createWorkspace(quire.db.pool, 'Archive B');
  A = { ws: a.workspace.id, key: a.apiKey };
  B = { ws: b.workspace.id, key: b.apiKey };
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
  await closeEventHub?.();
  const { pool } = await import('../../web/lib/server');
  await pool().end();
  vi.restoreAllMocks();
  await quire?.close();
});

const wsOf = (who: { ws: number }) => String(who.ws);

/** Each emitted event's outbox id by its stream position. */
const emittedIds = new Map<number, number>();

/**
 * A transient preview event (the auditor ties completion events to completed jobs); returns
 * its stream position (D10), the SSE `id:` a client sees for it.
 */
async function emit(workspaceId: number, data: Record<string, unknown>): Promise<number> {
  const id = await commitEvent(
    quire.db.pool,
    workspaceId,
    data,
    'dev.quire.transcription.task.started',
  );
  const position = (await positionOf(quire.db.pool, id))!;
  emittedIds.set(position, id);
  return position;
}

async function startJob(who: { ws: number; key: string }, body: Record<string, unknown>) {
  return call(
    R.jobs!,
    'POST',
    `/workspaces/${who.ws}/transcription-jobs`,
    { ws: wsOf(who) },
    { key: who.key, body },
  );
}

async function finished(workflowId: string) {
  return quire.temporal.workflow.getHandle(workflowId).result();
}

async function count(sql: string, params: unknown[] = []): Promise<number> {
  const { rows } = await quire.db.pool.query(`SELECT count(*)::int AS n FROM (${sql}) x`, params);
  return rows[0].n;
}

describe('transcription jobs (L1, J4, J5)', () => {
  it('L1 POST starts a job through the typed client (202), GET returns progress and the ordered attempt audit without tokens', async () => {
    const pageId = await quire.page(A.ws);
    const started = await startJob(A, {
      pageId,
      options: { simulated: { lines: 3 } },
      idempotencyKey: 'scan-1',
      externalReferenceId: 'ext-1',
      metadata: { shelf: 'B7' },
    });
    expect(started.status).toBe(202);
    expect(started.json).toMatchObject({ status: 'pending', created: true });
    expect(started.json.workflowId).toBe(`transcription-job-${started.json.jobId}`);
    expect((await finished(started.json.workflowId)).status).toBe('completed');

    const again = await startJob(A, { pageId, idempotencyKey: 'scan-1' });
    expect(again.status).toBe(202);
    expect(again.json).toMatchObject({ jobId: started.json.jobId, created: false });

    const got = await call(
      R.job!,
      'GET',
      '/x',
      { ws: wsOf(A), jobId: started.json.jobId },
      { key: A.key },
    );
    expect(got.status).toBe(200);
    expect(got.json).toMatchObject({
      id: started.json.jobId,
      status: 'completed',
      resultRevision: 1,
      inputRevision: 0,
      externalReferenceId: 'ext-1',
      idempotencyKey: 'scan-1',
      progress: { completedSegments: 3, totalSegments: 3, failedSegments: 0 },
    });
    expect(got.json.attempts.map((a: { attemptNumber: number }) => a.attemptNumber)).toEqual([1]);
    expect(got.json.attempts[0]).toMatchObject({ outcome: 'completed', resultRevision: 1 });
    expect(got.text).not.toMatch(/token/i);
    const hashes = await quire.db.pool.query(
      `SELECT encode(token_hash, 'hex') AS hex, encode(token_hash, 'base64') AS b64 FROM transcription_job_attempts`,
    );
    for (const h of hashes.rows) {
      expect(got.text).not.toContain(h.hex);
      expect(got.text).not.toContain(h.b64);
    }
  });

  it('L1 bad input is 400/413/415/422 with a stable code, and changes nothing', async () => {
    const pageId = await quire.page(A.ws);
    const before = await count('SELECT 1 FROM transcription_jobs');
    const post = (options: Parameters<typeof call>[4]) =>
      call(R.jobs!, 'POST', '/x', { ws: wsOf(A) }, { key: A.key, ...options });
    const cases: Array<[Awaited<ReturnType<typeof post>>, number, string]> = [
      [
        await post({ rawBody: '{"pageId":', contentType: 'application/json' }),
        400,
        'malformed_json',
      ],
      [await post({ body: { pageId: 'one' } }), 400, 'invalid_request'],
      [await post({ body: { pageId, surprise: true } }), 400, 'invalid_request'],
      [
        await post({
          rawBody: `pageId=${pageId}`,
          contentType: 'application/x-www-form-urlencoded',
        }),
        415,
        'unsupported_media_type',
      ],
      [
        await post({ body: { pageId, metadata: { blob: 'x'.repeat(1_100_000) } } }),
        413,
        'payload_too_large',
      ],
      [await post({ body: { pageId, provider: 'no-such-engine' } }), 422, 'unknown_provider'],
      [await post({ body: { pageId: 987654 } }), 404, 'page_not_found'],
    ];
    for (const [response, status, code] of cases) {
      expect({ status: response.status, code: response.json?.error?.code }).toEqual({
        status,
        code,
      });
      expect(typeof response.json.error.message).toBe('string');
    }
    const unauthenticated = await call(R.jobs!, 'GET', '/x', { ws: wsOf(A) }, {});
    expect(unauthenticated.status).toBe(401);
    expect(unauthenticated.json.error.code).toBe('unauthenticated');
    expect(await count('SELECT 1 FROM transcription_jobs')).toBe(before);
    const bad = await call(R.jobs!, 'GET', '/x?pageSize=101', { ws: wsOf(A) }, { key: A.key });
    expect(bad.status).toBe(400);
    expect(bad.json.error.code).toBe('invalid_query');
  });

  it('L1 pagination through 250 jobs: no gap, no duplicate, newest first; tampered, foreign and other-filter tokens are 400', async () => {
    const ws = (await createWorkspace(quire.db.pool, 'Paging')).workspace.id;
    const pagingKey = await addApiKey(quire.db.pool, ws, 'paging');
    const pages = [await quire.page(ws), await quire.page(ws), await quire.page(ws)];
    const created: string[] = [];
    // Seeded through the job store the typed client uses; each new job supersedes the page's
    // active one (J4), and the last active ones are cancelled, so no workflow is left waiting.
    for (let i = 0; i < 250; i++) {
      const { job } = await withTransaction(quire.db.pool, (tx) =>
        createJob(tx, {
          workspaceId: ws,
          pageId: pages[i % 3]!,
          snapshot: buildSnapshot({ provider: 'simulated' }),
        }),
      );
      created.push(job.id);
    }
    for (const id of created.slice(-3)) await cancelJob(quire.db.pool, ws, id);

    const list = (query: string, k = pagingKey, w = ws) =>
      call(
        R.jobs!,
        'GET',
        `/workspaces/${w}/transcription-jobs?${query}`,
        { ws: String(w) },
        { key: k },
      );
    const seen: string[] = [];
    let token: string | null = null;
    let pagesRead = 0;
    do {
      const response = await list(
        `pageSize=100${token ? `&pageToken=${encodeURIComponent(token)}` : ''}`,
      );
      expect(response.status).toBe(200);
      expect(response.json.jobs.length).toBeLessThanOrEqual(100);
      for (const job of response.json.jobs) {
        expect(Object.keys(job)).not.toContain('snapshot');
        expect(Object.keys(job)).not.toContain('attempts');
        seen.push(job.id);
      }
      token = response.json.nextPageToken;
      pagesRead += 1;
    } while (token);
    expect(pagesRead).toBe(3);
    expect(seen).toEqual([...created].reverse());
    expect(new Set(seen).size).toBe(250);

    const defaultPage = await list('');
    expect(defaultPage.json.jobs).toHaveLength(50);

    const superseded = await list('status=superseded&pageSize=100');
    expect(superseded.json.jobs.every((j: { status: string }) => j.status === 'superseded')).toBe(
      true,
    );
    const filteredToken = superseded.json.nextPageToken as string;
    expect(filteredToken).toBeTruthy();
    const next = await list(
      `status=superseded&pageSize=100&pageToken=${encodeURIComponent(filteredToken)}`,
    );
    expect(next.status).toBe(200);
    const byPage = await list(`pageId=${pages[0]}&pageSize=100`);
    expect(byPage.json.jobs).toHaveLength(84);

    const [payload, mac] = filteredToken.split('.');
    const tampered = `${payload!.slice(0, -2)}${payload!.slice(-2) === 'AA' ? 'AB' : 'AA'}.${mac}`;
    const rejected = [
      await list(`status=superseded&pageToken=${encodeURIComponent(tampered)}`),
      await list(`status=canceled&pageToken=${encodeURIComponent(filteredToken)}`),
      await list(`pageToken=${encodeURIComponent(filteredToken)}`),
      await list('pageToken=not-a-token'),
      // The same token under another workspace's key.
      await list(`status=superseded&pageToken=${encodeURIComponent(filteredToken)}`, A.key, A.ws),
    ];
    for (const response of rejected) {
      expect(response.status).toBe(400);
      expect(response.json.error.code).toBe('invalid_page_token');
    }
  });

  it('J5 cancel through the API: 200, then 409 once ended; J4 a second start supersedes', async () => {
    const pageId = await quire.page(A.ws);
    const first = await startJob(A, {
      pageId,
      options: { simulated: { lines: 50, latencyMs: 200 } },
    });
    const second = await startJob(A, {
      pageId,
      options: { simulated: { lines: 50, latencyMs: 200 } },
    });
    // The superseded workflow is cancelled without committing; the database says why.
    await finished(first.json.workflowId).catch(() => undefined);
    const old = await call(
      R.job!,
      'GET',
      '/x',
      { ws: wsOf(A), jobId: first.json.jobId },
      { key: A.key },
    );
    expect(old.json).toMatchObject({ status: 'superseded', supersededBy: second.json.jobId });
    const canceled = await call(
      R.jobCancel!,
      'POST',
      '/x',
      { ws: wsOf(A), jobId: second.json.jobId },
      { key: A.key },
    );
    expect(canceled.status).toBe(200);
    expect(canceled.json.status).toBe('canceled');
    const again = await call(
      R.jobCancel!,
      'POST',
      '/x',
      { ws: wsOf(A), jobId: second.json.jobId },
      { key: A.key },
    );
    expect(again.status).toBe(409);
    expect(again.json.error.code).toBe('job_not_active');
    await finished(second.json.workflowId).catch(() => undefined);
  });
});

async function completedPage(who: { ws: number; key: string }, kind: 'image' | 'audio' = 'image') {
  const pageId = await quire.page(who.ws, kind);
  const job = await startJob(who, {
    pageId,
    options: { simulated: kind === 'image' ? { lines: 2 } : { audioSegments: 2 } },
    idempotencyKey: `idem-${pageId}`,
    externalReferenceId: `ref-${pageId}`,
    metadata: { box: pageId },
  });
  expect((await finished(job.json.workflowId)).status).toBe('completed');
  return { pageId, jobId: job.json.jobId as string };
}

const edit = (_pageId: number, texts: string[]) => ({
  segments: texts.map((text, index) => ({
    index,
    target: { kind: 'xywh', box: { x: 0, y: index * 40, w: 400, h: 40 } },
    text,
  })),
});

describe('pages (SPEC §7)', () => {
  it('PUT If-Match: 428 without it, 412 stale_revision for a revision the page never had, V4 409 line_conflict for lines changed since, nothing written; 200 with the new ETag', async () => {
    const { pageId } = await completedPage(A);
    const params = { ws: wsOf(A), pageId: String(pageId) };
    const got = await call(R.page!, 'GET', '/x', params, { key: A.key });
    expect(got.status).toBe(200);
    expect(got.headers.get('etag')).toBe('"1"');
    expect(got.json).toMatchObject({ revision: 1, publishedRevision: null, kind: 'image' });
    expect(got.json.annotationPage.items).toHaveLength(2);

    const missing = await call(R.page!, 'PUT', '/x', params, {
      key: A.key,
      body: edit(pageId, ['a']),
    });
    expect(missing.status).toBe(428);
    const stale = await call(R.page!, 'PUT', '/x', params, {
      key: A.key,
      body: edit(pageId, ['a']),
      headers: { 'if-match': '"9"' },
    });
    expect(stale.status).toBe(412);
    expect(stale.json.error).toMatchObject({ code: 'stale_revision', currentRevision: 1 });
    expect(stale.headers.get('etag')).toBe('"1"');
    // From revision 0 (no lines) the edit writes line 0, which the engine wrote since.
    const clash = await call(R.page!, 'PUT', '/x', params, {
      key: A.key,
      body: edit(pageId, ['a']),
      headers: { 'if-match': '"0"' },
    });
    expect(clash.status).toBe(409);
    expect(clash.json.error).toMatchObject({ code: 'line_conflict', currentRevision: 1 });
    expect(clash.json.error.conflicts[0]).toMatchObject({ index: 0, mine: { text: 'a' } });
    const wrongKind = await call(R.page!, 'PUT', '/x', params, {
      key: A.key,
      body: { segments: [{ index: 0, target: { kind: 't', start: 0, end: 1 }, text: 'x' }] },
      headers: { 'if-match': '"1"' },
    });
    expect(wrongKind.status).toBe(422);
    expect(await count('SELECT 1 FROM page_revisions WHERE page_id = $1', [pageId])).toBe(2);

    const saved = await call(R.page!, 'PUT', '/x', params, {
      key: A.key,
      body: edit(pageId, ['The quokka smiled', 'at the archivist']),
      headers: { 'if-match': '"1"' },
    });
    expect(saved.status).toBe(200);
    expect(saved.headers.get('etag')).toBe('"2"');
    expect(saved.json.revision).toBe(2);

    const revisions = await call(R.revisions!, 'GET', '/x', params, { key: A.key });
    expect(
      revisions.json.revisions.map((r: { revision: number; source: string }) => [
        r.revision,
        r.source,
      ]),
    ).toEqual([
      [2, 'human'],
      [1, 'engine'],
      [0, 'initial'],
    ]);
    const one = await call(R.revision!, 'GET', '/x', { ...params, revision: '1' }, { key: A.key });
    expect(one.status).toBe(200);
    expect(one.json).toMatchObject({ revision: 1, source: 'engine' });
    expect(one.json.annotationPage.items).toHaveLength(2);

    const found = await call(R.search!, 'GET', '/x?q=quokka', { ws: wsOf(A) }, { key: A.key });
    expect(found.json.hits.map((h: { pageId: number }) => h.pageId)).toEqual([pageId]);
    const none = await call(R.search!, 'GET', '/x?q=quokka', { ws: wsOf(B) }, { key: B.key });
    expect(none.json.hits).toEqual([]);
    const empty = await call(R.search!, 'GET', '/x?q=', { ws: wsOf(A) }, { key: A.key });
    expect(empty.status).toBe(400);
  });

  it('exports: content types per format, 422 for a format that does not fit the page kind', async () => {
    const image = await completedPage(A);
    const audio = await completedPage(A, 'audio');
    await quire.db.pool.query('UPDATE pages SET width = 800, height = 600 WHERE id = $1', [
      image.pageId,
    ]);
    const exp = (pageId: number, format: string) =>
      call(
        R.exportPage!,
        'GET',
        `/x?format=${format}`,
        { ws: wsOf(A), pageId: String(pageId) },
        { key: A.key },
      );
    const expectations: Array<[number, string, number, RegExp?]> = [
      [image.pageId, 'iiif', 200, /^application\/ld\+json/],
      [image.pageId, 'text', 200, /^text\/plain/],
      [image.pageId, 'alto', 200, /^application\/xml/],
      [image.pageId, 'vtt', 422],
      [image.pageId, 'srt', 422],
      [audio.pageId, 'vtt', 200, /^text\/vtt/],
      [audio.pageId, 'srt', 200, /^application\/x-subrip/],
      [audio.pageId, 'alto', 422],
      [audio.pageId, 'pdf', 422],
      [audio.pageId, 'docx', 400],
    ];
    for (const [pageId, format, status, type] of expectations) {
      const response = await exp(pageId, format);
      expect({ format, status: response.status }).toEqual({ format, status });
      if (type) expect(response.headers.get('content-type')).toMatch(type);
      if (status === 422) expect(response.json.error.code).toBe('unsupported_format');
    }
    const vtt = await exp(audio.pageId, 'vtt');
    expect(vtt.text.startsWith('WEBVTT')).toBe(true);
    const iiif = await exp(image.pageId, 'iiif');
    expect(iiif.json.type).toBe('AnnotationPage');
  });
});

describe('publication (E3)', () => {
  let mirror: Server;
  const received: Array<{ path: string; headers: IncomingHttpHeaders; body: string }> = [];
  let answer = 200;
  beforeAll(async () => {
    mirror = createServer((req, res) => {
      let body = '';
      req.on('data', (c) => {
        body += c;
      });
      req.on('end', () => {
        received.push({ path: req.url ?? '', headers: req.headers, body });
        res.statusCode = answer;
        res.end();
      });
    });
    await new Promise<void>((resolve) => mirror.listen(0, '127.0.0.1', resolve));
  });
  afterAll(() => new Promise<void>((resolve) => mirror.close(() => resolve())));

  it('E3 publish fencing: a stale expectedRevision is 409 and changes nothing; publish writes snapshot, mirror row and event in one go; an older revision never overwrites a newer mirror row', async () => {
    const { pageId, jobId } = await completedPage(A);
    const params = { ws: wsOf(A), pageId: String(pageId) };
    const eventsBefore = await count('SELECT 1 FROM event_outbox');
    const stale = await call(R.publish!, 'POST', '/x', params, {
      key: A.key,
      body: { expectedRevision: 0 },
    });
    expect(stale.status).toBe(409);
    expect(stale.json.error).toMatchObject({ code: 'revision_mismatch', currentRevision: 1 });
    expect(await count('SELECT 1 FROM mirror_outbox WHERE page_id = $1', [pageId])).toBe(0);
    expect(await count('SELECT 1 FROM event_outbox')).toBe(eventsBefore);
    const page0 = await quire.db.pool.query('SELECT published_revision FROM pages WHERE id = $1', [
      pageId,
    ]);
    expect(page0.rows[0].published_revision).toBeNull();

    const published = await call(R.publish!, 'POST', '/x', params, {
      key: A.key,
      body: { expectedRevision: 1 },
    });
    expect(published.status).toBe(200);
    expect(published.json).toMatchObject({ publishedRevision: 1, changed: true });
    const event = await quire.db.pool.query(
      'SELECT type, workspace_id, data FROM event_outbox WHERE id = $1',
      [published.json.eventId],
    );
    expect(event.rows[0]).toMatchObject({
      type: 'dev.quire.annotations.published',
      workspace_id: A.ws,
    });
    expect(event.rows[0].data).toMatchObject({
      workspaceId: A.ws,
      pageId,
      itemId: 'item-1',
      revision: 1,
      jobId,
      externalReferenceId: `ref-${pageId}`,
      idempotencyKey: `idem-${pageId}`,
      metadata: { box: pageId },
    });
    expect(event.rows[0].data.canvasUri).toMatch(/^http:\/\/quire\.test\//);
    expect(await getMirrorRow(quire.db.pool, pageId)).toMatchObject({
      revision: 1,
      status: 'pending',
    });
    const repeat = await call(R.publish!, 'POST', '/x', params, {
      key: A.key,
      body: { expectedRevision: 1 },
    });
    expect(repeat.json.changed).toBe(false);

    await call(R.page!, 'PUT', '/x', params, {
      key: A.key,
      body: edit(pageId, ['second']),
      headers: { 'if-match': '1' },
    });
    // Two publishes of revision 2 race: exactly one event, one mirror row at 2.
    const racing = await Promise.all([
      call(R.publish!, 'POST', '/x', params, { key: A.key, body: { expectedRevision: 2 } }),
      call(R.publish!, 'POST', '/x', params, { key: A.key, body: { expectedRevision: 2 } }),
    ]);
    expect(racing.map((r) => r.status)).toEqual([200, 200]);
    expect(racing.filter((r) => r.json.changed)).toHaveLength(1);
    expect(
      await count(
        `SELECT 1 FROM event_outbox WHERE type = 'dev.quire.annotations.published' AND data->>'pageId' = $1`,
        [String(pageId)],
      ),
    ).toBe(2);
    expect((await getMirrorRow(quire.db.pool, pageId))?.revision).toBe(2);
    // A late writer with revision 1 loses against the row at revision 2.
    expect(await upsertMirrorRow(quire.db.pool, { pageId, workspaceId: A.ws, revision: 1 })).toBe(
      false,
    );
    expect((await getMirrorRow(quire.db.pool, pageId))?.revision).toBe(2);
    const snapshot = await quire.db.pool.query(
      'SELECT published_revision, published_snapshot FROM pages WHERE id = $1',
      [pageId],
    );
    expect(snapshot.rows[0].published_revision).toBe(2);
    expect(snapshot.rows[0].published_snapshot.items[0].body.value).toBe('second');

    // Mirror delivery: SSRF-guarded (loopback refused unless allowlisted), retried, then delivered.
    const port = (mirror.address() as AddressInfo).port;
    const blocked = await deliverMirrorOutbox({
      pool: quire.db.pool,
      mirrorUrl: `http://127.0.0.1:${port}/mirror`,
      allowHosts: '',
    });
    expect(blocked).toMatchObject({ claimed: 1, delivered: 0, failed: 1 });
    expect(received).toHaveLength(0);
    const afterBlock = await getMirrorRow(quire.db.pool, pageId);
    expect(afterBlock).toMatchObject({ status: 'failing', attempts: 1 });
    expect(afterBlock?.lastError).toMatch(/loopback/);
    expect(afterBlock!.nextAttemptAt.getTime()).toBeGreaterThan(Date.now());
    await quire.db.pool.query(
      'UPDATE mirror_outbox SET next_attempt_at = now() WHERE page_id = $1',
      [pageId],
    );
    answer = 503;
    const options = {
      pool: quire.db.pool,
      mirrorUrl: `http://127.0.0.1:${port}/mirror`,
      allowHosts: `127.0.0.1:${port}`,
    };
    expect(await deliverMirrorOutbox(options)).toMatchObject({ delivered: 0, failed: 1 });
    expect(await deliverMirrorOutbox(options)).toMatchObject({ claimed: 0 });
    await quire.db.pool.query(
      'UPDATE mirror_outbox SET next_attempt_at = now() WHERE page_id = $1',
      [pageId],
    );
    answer = 204;
    expect(await deliverMirrorOutbox(options)).toMatchObject({ delivered: 1, failed: 0 });
    const last = received[received.length - 1]!;
    expect(last.path).toBe(`/mirror/${pageId}`);
    expect(last.headers['x-quire-revision']).toBe('2');
    expect(JSON.parse(last.body)).toEqual(snapshot.rows[0].published_snapshot);
    expect(await getMirrorRow(quire.db.pool, pageId)).toMatchObject({
      status: 'delivered',
      revision: 2,
    });
  });
});

describe('webhooks (W1, W2) and providers (Q3)', () => {
  it('W1 create, list, deliveries, replay, delete; secrets are never returned; SSRF and shape errors are 422', async () => {
    const path = { ws: wsOf(A) };
    const secret = `whsec-${'k'.repeat(40)}`;
    webhookSecrets.push(secret);
    const create = (body: unknown) => call(R.webhooks!, 'POST', '/x', path, { key: A.key, body });
    const loopback = await create({ url: 'https://127.0.0.1:9/hook', secret });
    expect(loopback.status).toBe(422);
    expect(loopback.json.error.code).toBe('forbidden_target');
    const v6 = await create({ url: 'https://[::1]/hook', secret });
    expect(v6.json.error.code).toBe('forbidden_target');
    const http = await create({ url: 'http://example.com/hook', secret });
    expect([http.status, http.json.error.code]).toEqual([422, 'invalid_url']);
    const short = await create({ url: 'https://localhost/hook', secret: 'short' });
    expect([short.status, short.json.error.code]).toEqual([422, 'invalid_secret']);
    expect(short.text).not.toContain('short"');
    expect(await count('SELECT 1 FROM webhook_subscriptions')).toBe(0);

    configureWeb({ ...webConfig, QUIRE_WEBHOOK_ALLOW_HOSTS: 'localhost' });
    const created = await create({
      url: 'https://localhost:9443/hook',
      secret,
      eventTypes: ['dev.quire.annotations.published'],
    });
    expect(created.status).toBe(201);
    expect(created.text).not.toContain(secret);
    expect(Object.keys(created.json).sort()).toEqual([
      'createdAt',
      'disabledAt',
      'disabledReason',
      'eventTypes',
      'id',
      'url',
    ]);
    const id = created.json.id as string;
    const listed = await call(R.webhooks!, 'GET', '/x', path, { key: A.key });
    expect(listed.json.webhooks.map((w: { id: string }) => w.id)).toEqual([id]);
    expect(listed.text).not.toContain(secret);

    const eventId = await commitEvent(
      quire.db.pool,
      A.ws,
      { pageId: 1 },
      'dev.quire.annotations.published',
    );
    await fanOutEvents(quire.db.pool, { cursorName: 'api-test' });
    const deliveries = await call(
      R.deliveries!,
      'GET',
      '/x',
      { ...path, webhookId: id },
      { key: A.key },
    );
    expect(deliveries.status).toBe(200);
    const delivery = deliveries.json.deliveries.find(
      (d: { eventId: number }) => d.eventId === eventId,
    );
    expect(delivery).toMatchObject({
      status: 'pending',
      eventType: 'dev.quire.annotations.published',
    });
    const notYet = await call(
      R.replay!,
      'POST',
      '/x',
      { ...path, webhookId: id, deliveryId: String(delivery.id) },
      { key: A.key },
    );
    expect([notYet.status, notYet.json.error.code]).toEqual([409, 'delivery_not_replayable']);
    await recordDeliveryAttempt(
      quire.db.pool,
      delivery.id,
      { ok: false, statusCode: 500, latencyMs: 3, error: 'receiver answered 500' },
      { schedule: { delaysMs: [0], repeatEveryMs: 1, maxAgeMs: 0 } },
    );
    const replayed = await call(
      R.replay!,
      'POST',
      '/x',
      { ...path, webhookId: id, deliveryId: String(delivery.id) },
      { key: A.key },
    );
    expect(replayed.status).toBe(202);
    expect(replayed.json).toMatchObject({ status: 'pending', attemptCount: 0 });
    expect(replayed.json.attempts).toHaveLength(1);

    const removed = await call(
      R.webhook!,
      'DELETE',
      '/x',
      { ...path, webhookId: id },
      { key: A.key },
    );
    expect(removed.status).toBe(204);
    const gone = await call(R.webhook!, 'GET', '/x', { ...path, webhookId: id }, { key: A.key });
    expect(gone.status).toBe(404);
    expect(await count('SELECT 1 FROM webhook_deliveries WHERE subscription_id = $1', [id])).toBe(
      0,
    );
  });

  it('Q3 M3 providers: state and spend today; Resume of a workspace-credential pause through the typed client; unknown provider 404', async () => {
    // The simulated engine runs on each workspace's own credentials: A's pause is A's to lift.
    await quire.db.pool.query(
      `INSERT INTO provider_state (provider, workspace_id, status, reason, paused_at)
       VALUES ('simulated', $1, 'paused', 'credit', now())
       ON CONFLICT (provider, workspace_id) DO UPDATE SET status = 'paused', reason = 'credit', paused_at = now()`,
      [A.ws],
    );
    const state = await call(R.providers!, 'GET', '/x', { ws: wsOf(A) }, { key: A.key });
    expect(state.status).toBe(200);
    const simulated = state.json.providers.find((p: { name: string }) => p.name === 'simulated');
    expect(simulated).toMatchObject({
      status: 'paused',
      reason: 'credit',
      credentials: 'workspace',
      needsOperator: false,
      resumable: true,
    });
    expect(simulated.spentTodayMicros).toBeGreaterThan(0);
    expect(state.json.budget.workspace.spentMicros).toBeGreaterThan(0);
    const resumed = await call(
      R.resume!,
      'POST',
      '/x',
      { ws: wsOf(A), name: 'simulated' },
      { key: A.key },
    );
    expect(resumed.status).toBe(200);
    expect(resumed.json).toMatchObject({ provider: 'simulated', resumed: true });
    const after = await call(R.providers!, 'GET', '/x', { ws: wsOf(A) }, { key: A.key });
    expect(after.json.providers.find((p: { name: string }) => p.name === 'simulated').status).toBe(
      'active',
    );
    const unknown = await call(
      R.resume!,
      'POST',
      '/x',
      { ws: wsOf(A), name: 'nope' },
      { key: A.key },
    );
    expect(unknown.status).toBe(404);
    const bSpend = await call(R.providers!, 'GET', '/x', { ws: wsOf(B) }, { key: B.key });
    expect(bSpend.json.budget.workspace.spentMicros).toBe(0);
  });
});

async function openStream(
  who: { ws: number; key: string },
  headers: Record<string, string> = {},
  query = '',
) {
  const controller = new AbortController();
  const response = (await (R.events!.GET as (r: Request, c: unknown) => Promise<Response>)(
    request('GET', `/workspaces/${who.ws}/events${query}`, {
      key: who.key,
      headers,
      signal: controller.signal,
    }),
    { params: Promise.resolve({ ws: String(who.ws) }) },
  )) as Response;
  return {
    response,
    reader: response.ok ? SseReader.of(response) : undefined,
    abort: () => controller.abort(),
  };
}

describe('event stream (S1)', () => {
  it('S1 resume with Last-Event-ID is strictly after it; ready carries the high-water mark; checkpoints advance past hidden ids', async () => {
    await closeEventHub();
    const early = [] as number[];
    for (let i = 0; i < 4; i++) early.push(await emit(A.ws, { n: i }));
    const hidden = await emit(B.ws, { secretOfB: true });

    // Resume below the hub's window: read from Postgres.
    const s1 = await openStream(A, { 'last-event-id': String(early[1]) });
    expect(s1.response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const ready = await s1.reader!.next();
    expect(ready.event).toBe('dev.quire.stream.ready');
    expect(JSON.parse(ready.data!)).toMatchObject({ highWaterMark: hidden, resumeAfter: early[1] });
    const replay = await s1.reader!.until((f) => f.event === 'dev.quire.stream.checkpoint');
    const ids = replay
      .filter((f) => f.event?.startsWith('dev.quire.transcription'))
      .map((f) => Number(f.id));
    expect(ids).toEqual([early[2], early[3]]);
    expect(Number(replay[replay.length - 1]!.id)).toBe(hidden);
    const body = JSON.parse(replay[0]!.data!);
    expect(body).toMatchObject({
      specversion: '1.0',
      id: String(emittedIds.get(early[2]!)),
      source: `/quire/workspaces/${A.ws}`,
    });

    // Live: woken by NOTIFY, in commit order, another workspace's ids only as a checkpoint.
    const live = [await emit(A.ws, { n: 10 })];
    const hidden2 = await emit(B.ws, {});
    live.push(await emit(A.ws, { n: 11 }));
    const got = await s1.reader!.until((f) => Number(f.id) === live[1]);
    expect(
      got.filter((f) => f.event?.startsWith('dev.quire.transcription')).map((f) => Number(f.id)),
    ).toEqual(live);
    // Another workspace's id shows up only as a checkpoint cursor, never as an event.
    for (const f of got.filter((x) => Number(x.id) === hidden2))
      expect(f.event).toBe('dev.quire.stream.checkpoint');
    const hidden3 = await emit(B.ws, {});
    const checkpoint = await s1.reader!.next();
    expect(checkpoint).toMatchObject({ event: 'dev.quire.stream.checkpoint', id: String(hidden3) });
    // Heartbeat comments keep idle connections open.
    const idle = await s1.reader!.next(3_000, { comments: true });
    expect(idle.comment).toMatch(/^heartbeat/);
    await s1.reader!.close();

    // A reconnect with the last id seen gets exactly what came after it, from the hub's window.
    const after = await emit(A.ws, { n: 12 });
    const s2 = await openStream(A, {}, `?lastEventId=${live[0]}`);
    await s2.reader!.next();
    const resumed = await s2.reader!.until((f) => Number(f.id) === after);
    expect(
      resumed
        .filter((f) => f.event?.startsWith('dev.quire.transcription'))
        .map((f) => Number(f.id)),
    ).toEqual([live[1], after]);
    await s2.reader!.close();
    for (const frame of [...s1.reader!.frames, ...s2.reader!.frames])
      expect(frame.data ?? '').not.toContain('secretOfB');
  });

  it('S1 streams are bounded per API key (429 too_many_streams); a malformed Last-Event-ID is 400; no credentials is 401', async () => {
    const open = [await openStream(A), await openStream(A), await openStream(A)];
    for (const s of open) expect(s.response.status).toBe(200);
    const fourth = await openStream(A);
    expect(fourth.response.status).toBe(429);
    expect((await fourth.response.json()).error.code).toBe('too_many_streams');
    const other = await openStream(B);
    expect(other.response.status).toBe(200);
    await open[0]!.reader!.close();
    await eventually(
      async () => ((await openStream(A)).response.status === 200 ? true : undefined),
      5_000,
    );
    for (const s of [...open, other]) s.abort();
    const bad = await openStream(B, { 'last-event-id': 'abc' });
    expect(bad.response.status).toBe(400);
    const none = await (R.events!.GET as (r: Request, c: unknown) => Promise<Response>)(
      request('GET', `/workspaces/${A.ws}/events`),
      { params: Promise.resolve({ ws: String(A.ws) }) },
    );
    expect(none.status).toBe(401);
  });
});

describe('workspace isolation (SPEC §12)', () => {
  it('X isolation: a second workspace key sees nothing of the first (lists, gets, pages, search, webhooks, stream) and gets 404 for its ids', async () => {
    const { pageId, jobId } = await completedPage(A);
    configureWeb({ ...webConfig, QUIRE_WEBHOOK_ALLOW_HOSTS: 'localhost' });
    const secret = `iso-${'s'.repeat(40)}`;
    webhookSecrets.push(secret);
    const hook = await call(
      R.webhooks!,
      'POST',
      '/x',
      { ws: wsOf(A) },
      {
        key: A.key,
        body: { url: 'https://localhost:9443/iso', secret },
      },
    );
    expect(hook.status).toBe(201);
    const asB = { key: B.key };
    const b = wsOf(B);
    const jobs = await call(R.jobs!, 'GET', '/x', { ws: b }, asB);
    expect(jobs.json.jobs.filter((j: { id: string }) => j.id === jobId)).toEqual([]);
    const bJobs = await quire.db.pool.query(
      'SELECT id FROM transcription_jobs WHERE workspace_id = $1',
      [B.ws],
    );
    expect(jobs.json.jobs.map((j: { id: string }) => j.id).sort()).toEqual(
      bJobs.rows.map((r) => r.id).sort(),
    );
    const notFound: Array<Promise<{ status: number }>> = [
      call(R.job!, 'GET', '/x', { ws: b, jobId }, asB),
      call(R.jobCancel!, 'POST', '/x', { ws: b, jobId }, asB),
      call(R.page!, 'GET', '/x', { ws: b, pageId: String(pageId) }, asB),
      call(
        R.page!,
        'PUT',
        '/x',
        { ws: b, pageId: String(pageId) },
        { ...asB, body: edit(pageId, ['x']), headers: { 'if-match': '1' } },
      ),
      call(R.revisions!, 'GET', '/x', { ws: b, pageId: String(pageId) }, asB),
      call(R.revision!, 'GET', '/x', { ws: b, pageId: String(pageId), revision: '1' }, asB),
      call(R.exportPage!, 'GET', '/x?format=text', { ws: b, pageId: String(pageId) }, asB),
      call(
        R.publish!,
        'POST',
        '/x',
        { ws: b, pageId: String(pageId) },
        { ...asB, body: { expectedRevision: 1 } },
      ),
      call(R.webhook!, 'GET', '/x', { ws: b, webhookId: hook.json.id }, asB),
      call(R.webhook!, 'DELETE', '/x', { ws: b, webhookId: hook.json.id }, asB),
      call(R.deliveries!, 'GET', '/x', { ws: b, webhookId: hook.json.id }, asB),
      call(R.replay!, 'POST', '/x', { ws: b, webhookId: hook.json.id, deliveryId: '1' }, asB),
      // A's workspace in the path with B's key.
      call(R.jobs!, 'GET', '/x', { ws: wsOf(A) }, asB),
      call(R.page!, 'GET', '/x', { ws: wsOf(A), pageId: String(pageId) }, asB),
      call(R.webhooks!, 'GET', '/x', { ws: wsOf(A) }, asB),
    ];
    for (const response of await Promise.all(notFound)) expect(response.status).toBe(404);
    const webhooks = await call(R.webhooks!, 'GET', '/x', { ws: b }, asB);
    expect(webhooks.json.webhooks).toEqual([]);
    const search = await call(R.search!, 'GET', '/x?q=Line', { ws: b }, asB);
    expect(search.json.hits).toEqual([]);
    const aSearch = await call(R.search!, 'GET', '/x?q=Line', { ws: wsOf(A) }, { key: A.key });
    expect(aSearch.json.hits.length).toBeGreaterThan(0);
    const foreignStream = await openStream({ ws: A.ws, key: B.key });
    expect(foreignStream.response.status).toBe(404);

    const stream = await openStream(B, {}, '?lastEventId=0');
    await stream.reader!.next();
    const marker = await emit(A.ws, { marker: 'A-only' });
    const frames = await stream.reader!.until((f) => Number(f.id) >= marker);
    expect(
      frames.every(
        (f) =>
          f.event === 'dev.quire.stream.checkpoint' || !f.data?.includes(`"workspaceId":${A.ws}`),
      ),
    ).toBe(true);
    for (const frame of frames) {
      if (frame.event?.startsWith('dev.quire.') && frame.event !== 'dev.quire.stream.checkpoint') {
        expect(JSON.parse(frame.data!).source).toBe(`/quire/workspaces/${B.ws}`);
      }
    }
    expect(frames.some((f) => f.data?.includes('A-only'))).toBe(false);
    stream.abort();
  });

  it('O2 L1 responses and captured logs never carry API keys, webhook secrets or attempt tokens', async () => {
    const hashes = await quire.db.pool.query(
      `SELECT encode(token_hash, 'hex') AS hex, encode(token_hash, 'base64') AS b64 FROM transcription_job_attempts`,
    );
    expect(hashes.rows.length).toBeGreaterThan(0);
    const haystack = [...seenBodies, ...logs].join('\n');
    expect(seenBodies.length).toBeGreaterThan(50);
    for (const needle of [A.key, B.key, ...webhookSecrets]) expect(haystack).not.toContain(needle);
    for (const h of hashes.rows) {
      expect(haystack).not.toContain(h.hex);
      expect(haystack).not.toContain(h.b64);
    }
    expect(haystack).not.toMatch(/token_hash|sealedToken|secret_ciphertext/);
  });
});
