import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { searchArchive, searchStatement } from '../../db/search';
import { createTestDatabase, type TestDatabase } from '../support/db';

/**
 * D12: a search reads only its workspace's part of the index. A workspace of fixed size is
 * searched before and after another workspace fills the installation with pages holding the
 * same words; the buffers the search statement touches (EXPLAIN ANALYZE, BUFFERS) stay the
 * same, and the plan probes `pages_search_workspace`.
 */
let db: TestDatabase;

beforeAll(async () => {
  db = await createTestDatabase();
});

afterAll(async () => {
  await db?.drop();
});

async function workspace(name: string): Promise<number> {
  const { rows } = await db.pool.query('INSERT INTO workspaces (name) VALUES ($1) RETURNING id', [
    name,
  ]);
  return Number(rows[0].id);
}

/** `count` pages in one item of `ws`, each a line of text holding `words` and its folio. */
async function fill(ws: number, count: number, words: string) {
  await db.pool.query(
    `INSERT INTO items (workspace_id, id, title) VALUES ($1, 'volume', 'Volume') ON CONFLICT DO NOTHING`,
    [ws],
  );
  await db.pool.query(
    `INSERT INTO pages (workspace_id, item_id, position, kind, canvas_uri, revision, annotation_page, search_text)
     SELECT $1::bigint, 'volume', g, 'image', 'http://quire.test/canvas/' || $1::bigint || '/' || g, 1,
            jsonb_build_object('type', 'AnnotationPage', 'items', jsonb_build_array(
              jsonb_build_object('type', 'Annotation', 'quire:index', 0,
                'body', jsonb_build_object('type', 'TextualBody', 'value', $3 || ' folio' || g)))),
            $3 || ' folio' || g
       FROM generate_series((SELECT coalesce(max(position) + 1, 0) FROM pages WHERE workspace_id = $1),
                            (SELECT coalesce(max(position) + 1, 0) FROM pages WHERE workspace_id = $1) + $2::int - 1) g`,
    [ws, count, words],
  );
  await db.pool.query('VACUUM ANALYZE pages');
}

interface PlanNode {
  'Node Type': string;
  'Index Name'?: string;
  'Actual Rows': number;
  'Shared Hit Blocks': number;
  'Shared Read Blocks': number;
  Plans?: PlanNode[];
}

/**
 * The search statement's probe of the text index (EXPLAIN ANALYZE, BUFFERS): which index,
 * how many entries it yielded and how many shared buffers it touched.
 */
async function probe(ws: number, q: string) {
  const statement = searchStatement(ws, { q, limit: 20 }, ['simple']);
  const { rows } = await db.pool.query(
    `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${statement.text}`,
    statement.values,
  );
  const found: PlanNode[] = [];
  const walk = (node: PlanNode) => {
    if (node['Index Name']?.startsWith('pages_search')) found.push(node);
    for (const child of node.Plans ?? []) walk(child);
  };
  walk(rows[0]['QUERY PLAN'][0].Plan);
  expect(found).toHaveLength(1);
  const node = found[0]!;
  return {
    index: node['Index Name'],
    entries: node['Actual Rows'],
    buffers: node['Shared Hit Blocks'] + node['Shared Read Blocks'],
  };
}

describe('D12 search by workspace', () => {
  it("D12 a workspace's search touches the same buffers however many pages other workspaces hold with the same words", async () => {
    const mine = await workspace('fixed size');
    const others = await workspace('growing');
    await fill(mine, 300, 'common manifesto');
    const queries = { common: 'common', twoWords: 'common manifesto', rare: 'folio7' };
    const probes = async () => ({
      common: await probe(mine, queries.common),
      twoWords: await probe(mine, queries.twoWords),
      rare: await probe(mine, queries.rare),
    });
    const before = await probes();
    expect(before).toEqual({
      common: { index: 'pages_search_workspace', entries: 300, buffers: expect.any(Number) },
      twoWords: { index: 'pages_search_workspace', entries: 300, buffers: expect.any(Number) },
      rare: { index: 'pages_search_workspace', entries: 1, buffers: expect.any(Number) },
    });
    await fill(others, 20_000, 'common manifesto');
    const after = await probes();
    for (const query of Object.keys(queries) as Array<keyof typeof queries>) {
      // The probe yields the workspace's pages alone, from as many index blocks as before
      // (one of slack for an upper level of the index that the other pages may add).
      expect(after[query].entries, query).toBe(before[query].entries);
      expect(after[query].buffers, query).toBeLessThanOrEqual(before[query].buffers + 1);
    }
    // The answers are the workspace's own.
    const hits = await searchArchive(db.pool, mine, { q: 'common', limit: 500 });
    expect(hits).toHaveLength(300);
    expect(await searchArchive(db.pool, mine, { q: 'folio7', limit: 5 })).toHaveLength(1);
    expect(await searchArchive(db.pool, others, { q: 'folio7', limit: 5 })).toHaveLength(1);
    // A query of stop words only reads nothing and finds nothing.
    expect(await searchArchive(db.pool, mine, { q: '<>', limit: 5 })).toEqual([]);
  });
});
