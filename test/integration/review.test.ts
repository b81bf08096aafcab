import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { type Segment, segmentsOf } from '../../core/annotation';
import { parseConfig } from '../../core/config';
import { auditInvariants } from '../../db/audit';
import { getPage } from '../../db/pages';
import { addApiKey, createWorkspace } from '../../db/workspaces';
import { ingestBatch } from '../../ingest/batch';
import { configureWeb } from '../../web/lib/server';
import type { QuireWorker } from '../../worker/createWorker';
import { type CallResult, call, type RouteModule } from '../support/api';
import { seedPage, TEST_PUBLIC_URL } from '../support/pages';
import { createTestQuire, type TestQuire, temporalAddress } from '../support/quire';
import { file, uploadRequest, wav } from '../support/uploadFixtures';

/**
 * SPEC §18 (V1-V5) through the HTTP API, called in-process through the route modules, against
 * a real PostgreSQL database, a real Temporal dev server and a real worker running the
 * simulated engine.
 */
let quire: TestQuire;
let worker: QuireWorker;
let running: Promise<void>;
let stopWorker: () => void;
/** One workspace, two keys: two people (or two sessions) working on the same pages. */
let A: { ws: number; key: string; keyId: number };
let A2: { ws: number; key: string; keyId: number };
let B: { ws: number; key: string; keyId: number };

const R: Record<string, RouteModule> = {};
const ROUTES = {
  jobs: 'transcription-jobs/route',
  job: 'transcription-jobs/[jobId]/route',
  page: 'pages/[pageId]/route',
  verify: 'pages/[pageId]/verify/route',
  revision: 'pages/[pageId]/revisions/[revision]/route',
  exportPage: 'pages/[pageId]/export/route',
  review: 'review/route',
  workspace: 'route',
  progress: 'progress/route',
} as const;

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
  for (const [name, path] of Object.entries(ROUTES)) {
    R[name] = await import(`../../web/app/api/v1/workspaces/[ws]/${path}`);
  }
  const a = await createWorkspace(quire.db.pool, 'Review A');
  const second = await addApiKey(quire.db.pool, a.workspace.id, 'second reviewer');
  const b = await createWorkspace(quire.db.pool, 'Review B');
  A = { ws: a.workspace.id, key: a.apiKey, keyId: await keyIdOf(a.apiKey) };
  A2 = { ws: a.workspace.id, key: second, keyId: await keyIdOf(second) };
  B = { ws: b.workspace.id, key: b.apiKey, keyId: await keyIdOf(b.apiKey) };
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

async function keyIdOf(key: string): Promise<number> {
  const { authenticateApiKey } = await import('../../db/workspaces');
  return (await authenticateApiKey(quire.db.pool, key))!.actor.id;
}

type Who = { ws: number; key: string };

async function runJob(who: Who, pageId: number, options: Record<string, unknown>) {
  const started = await call(
    R.jobs!,
    'POST',
    '/x',
    { ws: String(who.ws) },
    { key: who.key, body: { pageId, options } },
  );
  expect(started.status).toBe(202);
  const result = await quire.temporal.workflow.getHandle(started.json.workflowId).result();
  expect(result.status).toBe('completed');
  const job = await call(
    R.job!,
    'GET',
    '/x',
    { ws: String(who.ws), jobId: started.json.jobId },
    { key: who.key },
  );
  return job.json;
}

/** A page the simulated engine read: `lines` machine lines at revision 1. */
async function transcribedPage(lines = 3, seed = 'first', itemId = 'item-1') {
  const { pageId } = await seedPage(quire.db.pool, {
    workspaceId: A.ws,
    itemId,
    width: 1800,
    height: 1400,
  });
  await runJob(A, pageId, { simulated: { lines, seed } });
  return pageId;
}

const pageParams = (who: Who, pageId: number) => ({ ws: String(who.ws), pageId: String(pageId) });

async function currentLines(pageId: number): Promise<Segment[]> {
  return segmentsOf((await getPage(quire.db.pool, A.ws, pageId))!.annotationPage);
}

/** A PUT of the whole segment list (as an integrator sends it) with one line's text changed. */
async function putLine(
  who: Who,
  pageId: number,
  fromRevision: number,
  index: number,
  text: string,
): Promise<CallResult> {
  const { getRevision } = await import('../../db/pages');
  const read = await getRevision(quire.db.pool, who.ws, pageId, fromRevision);
  const segments = segmentsOf(read!.annotationPage).map(({ stamp: _, ...s }) =>
    s.index === index ? { ...s, text } : s,
  );
  return call(R.page!, 'PUT', '/x', pageParams(who, pageId), {
    key: who.key,
    body: { segments },
    headers: { 'if-match': `"${fromRevision}"` },
  });
}

async function verify(who: Who, pageId: number, fromRevision: number, lines: number[]) {
  return call(R.verify!, 'POST', '/x', pageParams(who, pageId), {
    key: who.key,
    body: { lines },
    headers: { 'if-match': `"${fromRevision}"` },
  });
}

describe('V1 line states', () => {
  it('V1 an engine writes machine lines; a PUT marks only the changed line edited, with the key and time; verify marks lines verified; each revision keeps its states', async () => {
    const pageId = await transcribedPage();
    const engineLines = await currentLines(pageId);
    // An engine's lines are `machine`: who wrote them and when is their revision's provenance.
    expect(engineLines.map((s) => s.stamp)).toEqual([undefined, undefined, undefined]);
    const r1 = await call(
      R.revision!,
      'GET',
      '/x',
      { ...pageParams(A, pageId), revision: '1' },
      { key: A.key },
    );
    expect(r1.json).toMatchObject({ source: 'engine', engine: 'simulated' });

    const before = Date.now();
    const saved = await putLine(A, pageId, 1, 1, 'a corrected line');
    expect(saved.status).toBe(200);
    expect(saved.json.revision).toBe(2);
    const items = saved.json.annotationPage.items;
    expect(items.map((a: Record<string, unknown>) => a['quire:state'])).toEqual([
      undefined,
      'edited',
      undefined,
    ]);
    expect(items[1]['quire:stateBy']).toEqual({ kind: 'api-key', id: String(A.keyId) });
    expect(Date.parse(items[1]['quire:stateAt'])).toBeGreaterThanOrEqual(before - 1000);
    // The untouched lines keep the engine's stamp and confidence exactly.
    expect((await currentLines(pageId))[0]).toEqual(engineLines[0]);

    const verified = await verify(A2, pageId, 2, [0, 1]);
    expect(verified.status).toBe(200);
    expect(verified.json.revision).toBe(3);
    const lines = await currentLines(pageId);
    expect(lines.map((s) => s.stamp?.state ?? 'machine')).toEqual([
      'verified',
      'verified',
      'machine',
    ]);
    expect(lines[1]!.stamp!.by).toEqual({ kind: 'api-key', id: String(A2.keyId) });
    expect(lines[1]!.text).toBe('a corrected line');

    // Revision 2 still says what it said.
    const r2 = await call(
      R.revision!,
      'GET',
      '/x',
      { ...pageParams(A, pageId), revision: '2' },
      { key: A.key },
    );
    expect(
      r2.json.annotationPage.items.map((a: Record<string, unknown>) => a['quire:state']),
    ).toEqual([undefined, 'edited', undefined]);

    // The exports of the current revision carry the states.
    const pageXml = await call(R.exportPage!, 'GET', '/x?format=page', pageParams(A, pageId), {
      key: A.key,
    });
    expect(pageXml.text).toContain('<TextLine id="line_1" custom="quireState {state:verified;}"');
    expect(pageXml.text).toContain('<TextLine id="line_2" custom="quireState {state:machine;}"');
  });

  it('V1 bad input: an unknown line is 422 unknown_line, another workspace gets 404, and nothing is written; a stamp sent with a PUT is ignored', async () => {
    const pageId = await transcribedPage();
    const unknown = await verify(A, pageId, 1, [7]);
    expect(unknown.status).toBe(422);
    expect(unknown.json.error.code).toBe('unknown_line');
    const empty = await verify(A, pageId, 1, []);
    expect(empty.status).toBe(400);
    const foreign = await verify(B, pageId, 1, [0]);
    expect(foreign.status).toBe(404);
    const noIfMatch = await call(R.verify!, 'POST', '/x', pageParams(A, pageId), {
      key: A.key,
      body: { lines: [0] },
    });
    expect(noIfMatch.status).toBe(428);
    expect((await getPage(quire.db.pool, A.ws, pageId))!.revision).toBe(1);

    // A stamp sent with a PUT is not taken: the server decides a line's state.
    const claimed = segmentsOf((await getPage(quire.db.pool, A.ws, pageId))!.annotationPage).map(
      (s) =>
        s.index === 0
          ? {
              ...s,
              text: 'changed and claimed',
              stamp: { state: 'verified', by: { kind: 'api-key', id: '999' }, at: 'never' },
            }
          : s,
    );
    const put = await call(R.page!, 'PUT', '/x', pageParams(A, pageId), {
      key: A.key,
      body: { segments: claimed },
      headers: { 'if-match': '"1"' },
    });
    expect(put.status).toBe(200);
    const [first, second] = await currentLines(pageId);
    expect(first!.stamp).toMatchObject({ state: 'edited', by: { id: String(A.keyId) } });
    expect(second!.stamp).toBeUndefined();
  });
});

describe('V4 line-level merge', () => {
  it('V4 two sessions saving different lines of one page from the same revision both land; the same line gives 409 with the other text and its author', async () => {
    const pageId = await transcribedPage(4);
    // Both read revision 1.
    const first = await putLine(A, pageId, 1, 0, 'first reviewer, line 1');
    expect(first.status).toBe(200);
    expect(first.json).toMatchObject({ revision: 2, merged: false });
    const second = await putLine(A2, pageId, 1, 3, 'second reviewer, line 4');
    expect(second.status).toBe(200);
    expect(second.json).toMatchObject({ revision: 3, merged: true });
    expect(second.headers.get('etag')).toBe('"3"');
    const lines = await currentLines(pageId);
    expect(lines.map((s) => s.text)).toEqual([
      'first reviewer, line 1',
      expect.stringMatching(/^line 2 /i),
      expect.stringMatching(/^line 3 /i),
      'second reviewer, line 4',
    ]);
    expect(lines[0]!.stamp!.by.id).toBe(String(A.keyId));
    expect(lines[3]!.stamp!.by.id).toBe(String(A2.keyId));

    // A third save from revision 1 of line 1 meets the first reviewer's change.
    const clash = await putLine(A2, pageId, 1, 0, 'second reviewer, line 1');
    expect(clash.status).toBe(409);
    expect(clash.json.error).toMatchObject({
      code: 'line_conflict',
      currentRevision: 3,
      conflicts: [
        {
          index: 0,
          mine: { text: 'second reviewer, line 1' },
          theirs: {
            text: 'first reviewer, line 1',
            state: 'edited',
            by: { kind: 'api-key', id: String(A.keyId) },
          },
        },
      ],
    });
    expect((await getPage(quire.db.pool, A.ws, pageId))!.revision).toBe(3);

    // Choosing: the same text saved from the revision the conflict named lands.
    const chosen = await putLine(A2, pageId, 3, 0, 'second reviewer, line 1');
    expect(chosen.status).toBe(200);
    expect((await currentLines(pageId))[0]!.text).toBe('second reviewer, line 1');

    // A revision the page never had is still a 412 stale_revision.
    const future = await call(R.page!, 'PUT', '/x', pageParams(A, pageId), {
      key: A.key,
      body: { segments: [] },
      headers: { 'if-match': '"99"' },
    });
    expect(future.status).toBe(412);
    expect(future.json.error).toMatchObject({ code: 'stale_revision', currentRevision: 4 });
  });
});

describe('V3 protected lines on a re-run', () => {
  it('V3 a re-run reads only machine lines, keeps edited and verified ones as they are and says how many; overwriteHumanLines reads every line and is in the audit log', async () => {
    const pageId = await transcribedPage(3, 'first');
    expect((await putLine(A, pageId, 1, 0, 'a person typed this')).status).toBe(200);
    expect((await verify(A, pageId, 2, [1])).status).toBe(200);
    const kept = await currentLines(pageId);

    const rerun = await runJob(A, pageId, { simulated: { lines: 3, seed: 'second' } });
    expect(rerun.progress).toMatchObject({ keptHumanLines: 2, completedSegments: 3 });
    const after = await currentLines(pageId);
    expect(after.slice(0, 2)).toEqual(kept.slice(0, 2));
    expect(after[2]!.text).not.toBe(kept[2]!.text);
    expect(after[2]!.stamp).toBeUndefined();

    const overwrite = await runJob(A, pageId, {
      simulated: { lines: 3, seed: 'second' },
      overwriteHumanLines: true,
    });
    expect(overwrite.progress.keptHumanLines).toBe(0);
    const overwritten = await currentLines(pageId);
    expect(overwritten.map((s) => s.stamp)).toEqual([undefined, undefined, undefined]);
    expect(overwritten[0]!.text).toMatch(/^line 1 /i);
    const audit = await quire.db.pool.query(
      `SELECT actor_kind, actor_key_id, action, target FROM audit_log WHERE action = 'job.overwrite_human_lines'
         AND target = $1`,
      [`transcription-jobs/${overwrite.id}`],
    );
    expect(audit.rows).toEqual([
      {
        actor_kind: 'workspace',
        actor_key_id: A.keyId,
        action: 'job.overwrite_human_lines',
        target: `transcription-jobs/${overwrite.id}`,
      },
    ]);

    const bad = await call(
      R.jobs!,
      'POST',
      '/x',
      { ws: String(A.ws) },
      { key: A.key, body: { pageId, options: { overwriteHumanLines: 'yes' } } },
    );
    expect(bad.status).toBe(422);
    expect(bad.json.error.code).toBe('invalid_options');
  });
});

describe('V2 review queue', () => {
  it('V2 the queue lists lines not verified, lowest engine confidence first, per item and per workspace, keyset-paged with signed tokens; another workspace sees none', async () => {
    const item = `queue-${Date.now()}`;
    const first = await transcribedPage(3, 'q1', item);
    const second = await transcribedPage(2, 'q2', item);
    // Make the confidences differ: an integrator's PUT changes line 2 of the second page with
    // a confidence of its own (its other lines keep the engine's 0.87, whatever it sends).
    const { getRevision } = await import('../../db/pages');
    const read = await getRevision(quire.db.pool, A.ws, second, 1);
    const segments = segmentsOf(read!.annotationPage).map(({ stamp: _, ...s }) =>
      s.index === 1
        ? { ...s, text: 'an integrator read this', confidence: 0.1 }
        : { ...s, confidence: 0.95 },
    );
    expect(
      (
        await call(R.page!, 'PUT', '/x', pageParams(A, second), {
          key: A.key,
          body: { segments },
          headers: { 'if-match': '"1"' },
        })
      ).status,
    ).toBe(200);
    expect((await verify(A, first, 1, [0])).status).toBe(200);

    const queue = (query: string, who: Who = A) =>
      call(R.review!, 'GET', `/x?${query}`, { ws: String(who.ws) }, { key: who.key });
    const all = await queue(`itemId=${item}&pageSize=10`);
    expect(all.status).toBe(200);
    expect(
      all.json.lines.map((l: { pageId: number; index: number }) => [l.pageId, l.index]),
    ).toEqual([
      [second, 1],
      [first, 1],
      [first, 2],
      [second, 0],
    ]);
    expect(all.json.lines[0]).toMatchObject({
      itemId: item,
      kind: 'image',
      revision: 2,
      state: 'edited',
      target: { kind: 'xywh' },
    });
    expect(all.json.lines[1].text).toMatch(/^line 2 /i);
    expect(all.json.nextPageToken).toBeNull();

    // Paged two at a time: the same lines, in the same order, nothing twice.
    const seen: Array<[number, number]> = [];
    let token: string | null = null;
    do {
      const page = await queue(`itemId=${item}&pageSize=2${token ? `&pageToken=${token}` : ''}`);
      seen.push(
        ...page.json.lines.map((l: { pageId: number; index: number }) => [l.pageId, l.index]),
      );
      token = page.json.nextPageToken;
    } while (token);
    expect(seen).toEqual(
      all.json.lines.map((l: { pageId: number; index: number }) => [l.pageId, l.index]),
    );

    // A token is bound to its workspace and item.
    const two = await queue(`itemId=${item}&pageSize=2`);
    const elsewhere = await queue(`pageSize=2&pageToken=${two.json.nextPageToken}`);
    expect(elsewhere.status).toBe(400);
    const workspaceQueue = await queue('pageSize=100');
    expect(workspaceQueue.json.lines.length).toBeGreaterThanOrEqual(4);
    const foreign = await queue(`itemId=${item}&pageSize=10`, B);
    expect(foreign.json.lines).toEqual([]);
  });
});

describe('V5 progress', () => {
  it('V5 counts lines by state and fully verified pages per item and per workspace; the revision that verifies a page emits page.verified once', async () => {
    const item = `progress-${Date.now()}`;
    const pageId = await transcribedPage(3, 'p1', item);
    await transcribedPage(2, 'p2', item);
    const progress = (itemId?: string) =>
      call(
        R.progress!,
        'GET',
        itemId ? `/x?itemId=${itemId}` : '/x',
        { ws: String(A.ws) },
        { key: A.key },
      );
    expect((await progress(item)).json).toEqual({
      lines: { machine: 5, imported: 0, edited: 0, verified: 0, total: 5 },
      pages: { total: 2, withLines: 2, fullyVerified: 0 },
    });
    expect((await putLine(A, pageId, 1, 0, 'checked by hand')).status).toBe(200);
    expect((await verify(A, pageId, 2, [0, 1])).status).toBe(200);
    expect((await progress(item)).json.lines).toEqual({
      machine: 3,
      imported: 0,
      edited: 0,
      verified: 2,
      total: 5,
    });
    const events = () =>
      quire.db.pool.query(
        `SELECT data FROM event_outbox WHERE type = 'dev.quire.page.verified' AND subject = $1`,
        [`pages/${pageId}`],
      );
    expect((await events()).rows).toEqual([]);
    expect((await verify(A, pageId, 3, [2])).status).toBe(200);
    expect((await progress(item)).json).toEqual({
      lines: { machine: 2, imported: 0, edited: 0, verified: 3, total: 5 },
      pages: { total: 2, withLines: 2, fullyVerified: 1 },
    });
    expect((await events()).rows).toEqual([
      { data: { workspaceId: A.ws, pageId, itemId: item, revision: 4, lines: 3 } },
    ]);
    // Verifying again changes nothing that matters: no second event.
    expect((await verify(A, pageId, 4, [2])).status).toBe(200);
    expect((await events()).rows).toHaveLength(1);
    const workspace = (await progress()).json;
    expect(workspace.lines.total).toBeGreaterThanOrEqual(5);
    expect(workspace.pages.fullyVerified).toBeGreaterThanOrEqual(1);
  });
});

describe('V6 recordings', () => {
  async function recordedPage(who: Who): Promise<number> {
    const batch = await ingestBatch(
      { pool: quire.db.pool, blobStore: quire.blobStore, publicBaseUrl: TEST_PUBLIC_URL },
      who.ws,
      uploadRequest([
        { name: 'itemId', value: `interview-${Date.now()}` },
        file(wav(2000), 'a.wav'),
      ]),
    );
    const pageId = batch.pages[0]!.pageId;
    await runJob(who, pageId, { simulated: { audioSegments: 2 } });
    return pageId;
  }
  const workspaceOf = (who: Who) =>
    call(R.workspace!, 'GET', '/x', { ws: String(who.ws) }, { key: who.key });

  it('V6 a new workspace keeps its recordings once the engine holds them; delete-after-recognition (set through the API, audited) releases Quire copy as before', async () => {
    const created = await createWorkspace(quire.db.pool, 'Oral history');
    const archive = { ws: created.workspace.id, key: created.apiKey };
    expect((await workspaceOf(archive)).json.recordingRetention).toBe('keep');
    const kept = await recordedPage(archive);
    const page = await getPage(quire.db.pool, archive.ws, kept);
    expect(page!.blobKey).not.toBeNull();
    expect(segmentsOf(page!.annotationPage).every((s) => s.target.kind === 't')).toBe(true);
    const bytes = await quire.blobStore.readRange(page!.blobKey!, 0, 4);
    expect(Buffer.from(bytes).toString('latin1')).toBe('RIFF');
    const due = await quire.db.pool.query(
      `SELECT 1 FROM blob_cleanups WHERE blob_key = $1 AND status = 'due'`,
      [page!.blobKey],
    );
    expect(due.rowCount).toBe(0);

    const clinic = await createWorkspace(quire.db.pool, 'Clinic');
    const therapy = { ws: clinic.workspace.id, key: clinic.apiKey };
    const set = await call(
      R.workspace!,
      'PATCH',
      '/x',
      { ws: String(therapy.ws) },
      {
        key: therapy.key,
        body: { recordingRetention: 'delete-after-recognition' },
      },
    );
    expect(set.status).toBe(200);
    expect(set.json.recordingRetention).toBe('delete-after-recognition');
    const bad = await call(
      R.workspace!,
      'PATCH',
      '/x',
      { ws: String(therapy.ws) },
      {
        key: therapy.key,
        body: { recordingRetention: 'forever' },
      },
    );
    expect(bad.status).toBe(400);
    const audit = await quire.db.pool.query(
      `SELECT before, after FROM audit_log WHERE action = 'workspace.recording_retention' AND workspace_id = $1`,
      [therapy.ws],
    );
    expect(audit.rows).toEqual([
      {
        before: { recordingRetention: 'keep' },
        after: { recordingRetention: 'delete-after-recognition' },
      },
    ]);
    const released = await recordedPage(therapy);
    expect((await getPage(quire.db.pool, therapy.ws, released))!.blobKey).toBeNull();
  });

  it('V6 V11 a speaker is renamed once on every line of that speaker on the page, and named for a span of lines, without editing the text', async () => {
    const pageId = await quire.page(A.ws, 'audio');
    await runJob(A, pageId, { simulated: { audioSegments: 3 } });
    const before = await currentLines(pageId);
    const speaker = before.find((s) => s.speaker)?.speaker;
    expect(speaker).toBeDefined();
    const { editPage } = await import('../../web/services/pages');
    const result = await editPage(
      {
        workspaceId: A.ws,
        actor: { kind: 'apiKey', id: A.keyId, name: 'key' },
        grant: { kind: 'key', scope: 'write' },
      },
      {
        pageId,
        expectedRevision: 1,
        edit: { renameSpeaker: { from: speaker!, to: 'Mrs Ada Byron' } },
        channel: 'console',
      },
    );
    expect(result.state).toBe('committed');
    const after = await currentLines(pageId);
    for (const [i, line] of after.entries()) {
      const was = before[i]!;
      expect(line.speaker).toBe(was.speaker === speaker ? 'Mrs Ada Byron' : was.speaker);
      expect(line.text).toBe(was.text);
      // V11: a speaker's name is not an edit of the text: every line keeps its state.
      expect(line.stamp?.state ?? 'machine').toBe('machine');
    }
    // V11: a speaker named for a span of lines, on a recording whose engine gave none.
    const span = await editPage(
      {
        workspaceId: A.ws,
        actor: { kind: 'apiKey', id: A.keyId, name: 'key' },
        grant: { kind: 'key', scope: 'write' },
      },
      {
        pageId,
        expectedRevision: 2,
        edit: { assignSpeaker: { lines: [0, 1], speaker: 'Interviewer' } },
        channel: 'console',
      },
    );
    expect(span.state).toBe('committed');
    const assigned = await currentLines(pageId);
    expect(assigned.map((l) => l.speaker)).toEqual([
      'Interviewer',
      'Interviewer',
      ...after.slice(2).map((l) => l.speaker),
    ]);
    expect(assigned.map((l) => [l.text, l.stamp?.state ?? 'machine'])).toEqual(
      after.map((l) => [l.text, 'machine']),
    );
  });
});
