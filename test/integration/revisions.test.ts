import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { commitPage, failJobOnConflict } from '../../activities/transcriptStages';
import { createLocalBlobStore } from '../../blobs';
import { CLI_ACTOR } from '../../core/actor';
import { emptyAnnotationPage, type Segment, segmentsOf } from '../../core/annotation';
import { createAccount } from '../../db/accounts';
import { auditInvariants } from '../../db/audit';
import { getJobById } from '../../db/jobs';
import { getPage, savePageEdit } from '../../db/pages';
import { withTransaction } from '../../db/pool';
import { commitRevision, type RevisionWrite } from '../../db/revisions';
import { createWorkspace } from '../../db/workspaces';
import { ingestBatch } from '../../ingest/batch';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { seedPage, seedRunningAttempt, TEST_PUBLIC_URL } from '../support/pages';
import { file, png, uploadRequest } from '../support/uploadFixtures';
import { waitUntil } from '../support/wait';

/**
 * J1 I3: every writer of a page revision goes through `commitRevision` (db/revisions.ts), and
 * the pages tests seed are the pages an ingest writes.
 */
let db: TestDatabase;
let blobDir: string;
let ws: number;

beforeAll(async () => {
  db = await createTestDatabase();
  blobDir = await mkdtemp(join(tmpdir(), 'quire-revisions-'));
  ws = (await createWorkspace(db.pool, 'Revisions')).workspace.id;
});
afterAll(async () => {
  await db?.drop();
  if (blobDir) await rm(blobDir, { recursive: true, force: true });
});

const line = (text: string): Segment[] => [
  { index: 0, target: { kind: 'xywh', box: { x: 0, y: 0, w: 10, h: 10 } }, text },
];

/** A page's row and its revision history, as far as the writer of a revision decides them. */
async function revisionState(pageId: number) {
  const page = await db.pool.query(
    'SELECT canvas_uri, revision, annotation_page, search_text FROM pages WHERE id = $1',
    [pageId],
  );
  const history = await db.pool.query(
    // R5: the editor is the account the typed author columns name, shown by its name.
    `SELECT revision, annotation_page, source, engine, model, model_version, job_id, attempt_number,
            (SELECT name FROM accounts WHERE r.author_kind = 'account' AND id = r.author_id) AS edited_by,
            provenance
       FROM page_revisions r WHERE page_id = $1 ORDER BY revision`,
    [pageId],
  );
  return { ...page.rows[0], history: history.rows };
}

/** The same state with the page's own canvas URI replaced, so two pages can be compared. */
async function revisionShape(pageId: number) {
  const state = await revisionState(pageId);
  return JSON.parse(JSON.stringify(state).replaceAll(state.canvas_uri, '<canvas>'));
}

describe('J1 one writer of page revisions', () => {
  it('J1 revision 0 of a seeded page is written exactly as an ingest writes it', async () => {
    const ingested = await ingestBatch(
      { pool: db.pool, blobStore: createLocalBlobStore(blobDir), publicBaseUrl: TEST_PUBLIC_URL },
      ws,
      uploadRequest([{ name: 'itemId', value: 'ingested' }, file(png(4, 4))]),
    );
    const seeded = await seedPage(db.pool, { workspaceId: ws, itemId: 'seeded' });
    const ingestedPage = ingested.pages[0]!;

    expect(await revisionState(ingestedPage.pageId)).toMatchObject({
      revision: 0,
      annotation_page: emptyAnnotationPage(ingestedPage.canvasUri),
      search_text: '',
      history: [
        {
          revision: 0,
          annotation_page: emptyAnnotationPage(ingestedPage.canvasUri),
          source: 'initial',
          engine: null,
          model: null,
          model_version: null,
          job_id: null,
          attempt_number: null,
          edited_by: null,
          provenance: null,
        },
      ],
    });
    expect(await revisionShape(seeded.pageId)).toEqual(await revisionShape(ingestedPage.pageId));
    expect(seeded.canvasUri).toBe(`${TEST_PUBLIC_URL}/iiif/${ws}/seeded/canvas/${seeded.pageId}`);
  });

  it('J1 every writer of a page revision goes through commitRevision: a CAS miss is one typed conflict', async () => {
    // A job reads the page at revision 0 ...
    const { pageId, job, claim, fence } = await seedRunningAttempt(db.pool, {
      workspaceId: ws,
      itemId: 'miss',
    });
    expect(claim.inputRevision).toBe(0);
    // ... and an editor moves it to revision 1 meanwhile.
    const edit = (expectedRevision: number, text: string) =>
      withTransaction(db.pool, (tx) =>
        savePageEdit(tx, {
          workspaceId: ws,
          pageId,
          expectedRevision,
          segments: line(text),
          author: { kind: 'apiKey', id: 1 },
          channel: 'api',
        }),
      );
    expect(await edit(0, 'by hand')).toEqual({ state: 'committed', revision: 1 });
    const before = await revisionState(pageId);

    // The engine's commit: the typed miss, which fails the job `conflict`.
    const engine = { engine: 'simulated', model: 'sim-1', version: '1' };
    const committed = await commitPage(db.pool, fence, {
      segments: line('by engine'),
      completed: 1,
      failed: 0,
      total: 1,
      engine,
    });
    expect(committed).toEqual({ state: 'conflict', currentRevision: 1 });
    if (committed.state !== 'conflict') throw new Error('expected a conflict');
    await failJobOnConflict(db.pool, fence, committed);
    expect(await getJobById(db.pool, job.id)).toMatchObject({
      status: 'failed',
      errorCategory: 'conflict',
    });

    // A human edit on the revision it read: `stale`, with the current revision.
    expect(await edit(0, 'late edit')).toEqual({ state: 'conflict', currentRevision: 1 });

    // An import expects a new page at revision 0; a page's revision 0 is written once.
    const attempt = (write: Omit<RevisionWrite, 'pageId'>) =>
      withTransaction(db.pool, (tx) => commitRevision(tx, { pageId, ...write }));
    expect(
      await attempt({
        expectedRevision: 0,
        segments: line('imported'),
        provenance: {
          source: 'import',
          import: {
            format: 'page',
            namespace: 'http://schema.primaresearch.org/PAGE/gts/pagecontent/2019-07-15',
            producer: null,
            sha256: '0'.repeat(64),
            filename: null,
          },
        },
      }),
    ).toEqual({ state: 'conflict', currentRevision: 1 });
    expect(
      await attempt({ expectedRevision: null, segments: [], provenance: { source: 'initial' } }),
    ).toEqual({ state: 'conflict', currentRevision: 1 });
    const fresh = await seedPage(db.pool, { workspaceId: ws, itemId: 'miss' });
    expect(
      await withTransaction(db.pool, (tx) =>
        commitRevision(tx, {
          pageId: fresh.pageId,
          expectedRevision: null,
          segments: [],
          provenance: { source: 'initial' },
        }),
      ),
    ).toEqual({ state: 'conflict', currentRevision: 0 });

    // No miss wrote anything.
    expect(await revisionState(pageId)).toEqual(before);
    expect(before.history.map((r: { source: string }) => r.source)).toEqual(['initial', 'human']);
    expect(segmentsOf((await getPage(db.pool, ws, pageId))!.annotationPage)).toEqual(
      line('by hand'),
    );
    expect(await auditInvariants(db.pool)).toEqual([]);
  });

  it('J1 two writers from the same revision: the compare-and-set lets one through, the other gets the conflict', async () => {
    const { pageId } = await seedPage(db.pool, { workspaceId: ws, itemId: 'race' });
    // Each writer is a person whose name is the text they write.
    const editors = new Map<string, number>();
    for (const name of ['first', 'second']) {
      const account = await createAccount(db.pool, CLI_ACTOR, {
        email: `${name}@revisions.test`,
        name,
        passwordHash: null,
      });
      editors.set(name, account.id);
    }
    const human = (text: string): RevisionWrite => ({
      pageId,
      expectedRevision: 0,
      segments: line(text),
      provenance: {
        source: 'human',
        author: { kind: 'account', id: editors.get(text)! },
        channel: 'console',
      },
    });
    const first = await db.pool.connect();
    const second = await db.pool.connect();
    try {
      await first.query('BEGIN');
      expect(await commitRevision(first, human('first'))).toEqual({
        state: 'committed',
        revision: 1,
      });
      await second.query('BEGIN');
      const secondPid = (await second.query('SELECT pg_backend_pid() AS pid')).rows[0].pid;
      // Neither writer locked the page beforehand: the second reads revision 0 too, and its
      // compare-and-set waits on the first's row lock.
      const late = commitRevision(second, human('second'));
      await waitUntil(async () => {
        const { rows } = await db.pool.query(
          `SELECT wait_event_type FROM pg_stat_activity WHERE pid = $1`,
          [secondPid],
        );
        return rows[0]?.wait_event_type === 'Lock';
      });
      await first.query('COMMIT');
      expect(await late).toEqual({ state: 'conflict', currentRevision: 1 });
      await second.query('COMMIT');
    } finally {
      // Destroyed, not returned: a failed expectation may leave either inside its transaction.
      first.release(true);
      second.release(true);
    }
    const state = await revisionState(pageId);
    expect(state.revision).toBe(1);
    expect(state.history.map((r: { edited_by: string | null }) => r.edited_by)).toEqual([
      null,
      'first',
    ]);
  });
});
