import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getMirrorRow } from '../../db/mirrorOutbox';
import { publishPage, savePageEdit } from '../../db/pages';
import { withTransaction } from '../../db/pool';
import { createWorkspace } from '../../db/workspaces';
import { deliverMirrorOutbox } from '../../worker/mirrorRelay';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { seedPage } from '../support/pages';
import { waitUntil } from '../support/wait';

/**
 * E3 mirror delivery against real Postgres and a real HTTP mirror: a mirror that applies each
 * PUT when it answers it, so whichever PUT answers last is what the mirror holds.
 */
let db: TestDatabase;
let mirror: Server;
let port: number;
let workspaceId: number;
/** What the mirror holds per page: the revision of the last PUT it applied. */
const held = new Map<string, number>();
const applied: Array<{ page: string; revision: number }> = [];
const holdRevisions = new Set<number>();
const waiting: Array<() => void> = [];
let inFlight = 0;
let maxInFlight = 0;

beforeAll(async () => {
  db = await createTestDatabase();
  workspaceId = (await createWorkspace(db.pool, 'Mirror')).workspace.id;
  mirror = createServer((req, res) => {
    const page = req.url!.split('/').pop()!;
    const revision = Number(req.headers['x-quire-revision']);
    inFlight += 1;
    maxInFlight = Math.max(maxInFlight, inFlight);
    req.resume();
    req.on('end', () => {
      const apply = () => {
        held.set(page, revision);
        applied.push({ page, revision });
        inFlight -= 1;
        res.writeHead(204).end();
      };
      if (holdRevisions.has(revision)) waiting.push(apply);
      else apply();
    });
  });
  await new Promise<void>((resolve) => mirror.listen(0, '127.0.0.1', resolve));
  port = (mirror.address() as AddressInfo).port;
});

afterAll(async () => {
  for (const release of waiting.splice(0)) release();
  await new Promise((resolve) => mirror?.close(resolve));
  await db?.drop();
});

async function pageWithRevisions(itemId: string, revisions: number): Promise<number> {
  const { pageId } = await seedPage(db.pool, { workspaceId, itemId, width: 100, height: 100 });
  return withTransaction(db.pool, async (client) => {
    for (let r = 0; r < revisions; r++) {
      const saved = await savePageEdit(client, {
        workspaceId,
        pageId,
        expectedRevision: r,
        segments: [
          { index: 0, target: { kind: 'xywh', box: { x: 0, y: 0, w: 10, h: 10 } }, text: `r${r}` },
        ],
        author: { kind: 'apiKey', id: 1 },
        channel: 'api',
      });
      expect(saved.state).toBe('committed');
    }
    return pageId;
  });
}

async function editAndPublish(pageId: number, expectedRevision: number) {
  await withTransaction(db.pool, (client) =>
    savePageEdit(client, {
      workspaceId,
      pageId,
      expectedRevision,
      segments: [
        { index: 0, target: { kind: 'xywh', box: { x: 0, y: 0, w: 10, h: 10 } }, text: 'newer' },
      ],
      author: { kind: 'apiKey', id: 1 },
      channel: 'api',
    }),
  );
  const published = await publishPage(db.pool, {
    workspaceId,
    pageId,
    expectedRevision: expectedRevision + 1,
  });
  expect(published.state).toBe('published');
}

describe('mirror delivery (E3)', () => {
  it('E3 a newer revision published while the older PUT is in flight waits for it: one PUT per page at a time, in revision order, and the mirror ends on the revision the database calls delivered', async () => {
    const pageId = await pageWithRevisions('mirror-order', 1);
    expect((await publishPage(db.pool, { workspaceId, pageId, expectedRevision: 1 })).state).toBe(
      'published',
    );
    const options = {
      pool: db.pool,
      mirrorUrl: `http://127.0.0.1:${port}/mirror`,
      allowHosts: `127.0.0.1:${port}`,
      timeoutMs: 10_000,
    };
    // The mirror is slow to answer the PUT of revision 1.
    holdRevisions.add(1);
    const first = deliverMirrorOutbox(options);
    await waitUntil(() => waiting.length === 1, 10_000);

    // Revision 2 is published while revision 1 is on the wire; a second relay pass runs.
    await editAndPublish(pageId, 1);
    expect(await getMirrorRow(db.pool, pageId)).toMatchObject({ revision: 2, status: 'pending' });
    const second = await deliverMirrorOutbox(options);
    expect(second.claimed).toBe(0);

    // The slow mirror answers revision 1 at last; revision 2 is not marked by that answer.
    holdRevisions.clear();
    waiting.shift()!();
    expect(await first).toMatchObject({ claimed: 1, delivered: 1 });
    expect(await getMirrorRow(db.pool, pageId)).toMatchObject({ revision: 2, status: 'pending' });

    // Now revision 2 goes, and it is the last PUT the mirror applies.
    expect(await deliverMirrorOutbox(options)).toMatchObject({ claimed: 1, delivered: 1 });
    const page = String(pageId);
    expect(applied.filter((a) => a.page === page).map((a) => a.revision)).toEqual([1, 2]);
    expect(maxInFlight).toBe(1);
    const row = await getMirrorRow(db.pool, pageId);
    expect(row).toMatchObject({ revision: 2, status: 'delivered', leasedUntil: null });
    expect(held.get(page)).toBe(row!.revision);
  });

  it('E3 a relay that died with a claim frees the page when its lease runs out', async () => {
    const pageId = await pageWithRevisions('mirror-lease', 1);
    await publishPage(db.pool, { workspaceId, pageId, expectedRevision: 1 });
    // A claim nobody answers (its relay was killed): the row is held until the lease ends.
    await db.pool.query(
      `UPDATE mirror_outbox SET lease_token = gen_random_uuid(), leased_until = now() + interval '1 hour'
        WHERE page_id = $1`,
      [pageId],
    );
    const options = {
      pool: db.pool,
      mirrorUrl: `http://127.0.0.1:${port}/mirror`,
      allowHosts: `127.0.0.1:${port}`,
    };
    expect(await deliverMirrorOutbox(options)).toMatchObject({ claimed: 0 });
    await db.pool.query(
      `UPDATE mirror_outbox SET leased_until = now() - interval '1 second' WHERE page_id = $1`,
      [pageId],
    );
    expect(await deliverMirrorOutbox(options)).toMatchObject({ claimed: 1, delivered: 1 });
    expect(await getMirrorRow(db.pool, pageId)).toMatchObject({
      revision: 1,
      status: 'delivered',
      leasedUntil: null,
    });
    expect(held.get(String(pageId))).toBe(1);
  });
});
