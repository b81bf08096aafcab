import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { XMLParser } from 'fast-xml-parser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLocalBlobStore } from '../../blobs';
import { CLI_ACTOR, lineAuthorOf } from '../../core/actor';
import { segmentsOf } from '../../core/annotation';
import { parseConfig } from '../../core/config';
import type { JobRecord } from '../../core/jobStore';
import { stampEdit } from '../../core/lineStates';
import { KNOWN_PROVIDERS } from '../../core/providerCatalogue';
import { createAccount, findAccountByEmail } from '../../db/accounts';
import { getPage, savePageEdit } from '../../db/pages';
import { withTransaction } from '../../db/pool';
import { commitRevision } from '../../db/revisions';
import { createWorkspace } from '../../db/workspaces';
import { ingestBatch } from '../../ingest/batch';
import { recordJobsForIngest } from '../../ingest/jobs';
import { configureWeb } from '../../web/lib/server';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { MANIFESTO, pageSchemaErrors } from '../support/interchange';
import { file, png, uploadRequest } from '../support/uploadFixtures';

/**
 * I8 through the real export route and Postgres: the ALTO and PAGE exports of a page name
 * what wrote its revision, read from `page_revisions`: the engine, model and version of the
 * reading (or the imported file and its software), then each human edit, in order. PAGE is
 * validated against the 2019-07-15 XSD; the repository has no ALTO schema, so ALTO's
 * elements are asserted.
 */

const BASE = 'https://quire.test';
let db: TestDatabase;
let dir: string;
let A: { ws: number; key: string };
let enginePage: number;
let importedItem: string;
let ben: { id: number };
let importedPage: number;
// biome-ignore lint/suspicious/noExplicitAny: route modules are called loosely, as Next does
type Route = Record<string, (r: Request, c: any) => Promise<Response> | Response>;
let exportRoute: Route;

const xml = new XMLParser({
  ignoreAttributes: false,
  attributeNamePrefix: '@',
  parseTagValue: false,
  isArray: (name) => name === 'Processing' || name === 'MetadataItem',
});

async function exportOf(pageId: number, format: 'alto' | 'page' | 'hocr'): Promise<string> {
  const response = await exportRoute.GET!(
    new Request(`${BASE}/api/v1/workspaces/${A.ws}/pages/${pageId}/export?format=${format}`, {
      headers: { authorization: `Bearer ${A.key}` },
    }),
    { params: Promise.resolve({ ws: String(A.ws), pageId: String(pageId) }) },
  );
  expect(response.status).toBe(200);
  return response.text();
}

/**
 * An edit by the person with this email, whose account is named by it; `stamped`: the line
 * changed is stamped `edited` by them, as the console's save does (V1).
 */
async function edit(pageId: number, editor: string, text: string, stamped = false) {
  const existing = await findAccountByEmail(db.pool, editor);
  const account =
    existing ??
    (await createAccount(db.pool, CLI_ACTOR, { email: editor, name: editor, passwordHash: null }));
  const page = (await getPage(db.pool, A.ws, pageId))!;
  const segments = segmentsOf(page.annotationPage);
  const next = [{ ...segments[0]!, text }, ...segments.slice(1)];
  const by = lineAuthorOf({ kind: 'account', id: account.id });
  const result = await withTransaction(db.pool, (tx) =>
    savePageEdit(tx, {
      workspaceId: A.ws,
      pageId,
      expectedRevision: page.revision,
      segments: stamped ? stampEdit(segments, next, by, new Date().toISOString()) : next,
      author: { kind: 'account', id: account.id },
      channel: 'console',
    }),
  );
  expect(result.state).toBe('committed');
  return account;
}

beforeAll(async () => {
  db = await createTestDatabase();
  dir = await mkdtemp(join(tmpdir(), 'quire-provenance-'));
  configureWeb(
    parseConfig({
      DATABASE_URL: db.url,
      QUIRE_SECRET_KEY: 'provenance-test-secret-key-0123456789ab',
      QUIRE_PUBLIC_URL: BASE,
      QUIRE_BLOB_DIR: dir,
    }),
  );
  const a = await createWorkspace(db.pool, 'Provenance');
  A = { ws: a.workspace.id, key: a.apiKey };
  const records: JobRecord[] = [];
  const deps = {
    pool: db.pool,
    blobStore: createLocalBlobStore(dir),
    publicBaseUrl: BASE,
    createJobs: recordJobsForIngest({
      workspaceId: A.ws,
      defaultProvider: 'auto',
      enabled: KNOWN_PROVIDERS,
      records,
    }),
  };
  // A page read by an engine: its job's commit goes through the one writer of revisions.
  const read = await ingestBatch(deps, A.ws, uploadRequest([file(png(400, 300), 'p.png')]));
  enginePage = read.pages[0]!.pageId;
  await withTransaction(db.pool, async (tx) => {
    const written = await commitRevision(tx, {
      pageId: enginePage,
      expectedRevision: 0,
      segments: [
        { index: 0, target: { kind: 'xywh', box: { x: 10, y: 10, w: 200, h: 30 } }, text: 'Erste' },
        { index: 1, target: { kind: 'xywh', box: { x: 10, y: 50, w: 200, h: 30 } }, text: 'Zwote' },
      ],
      provenance: {
        source: 'engine',
        engine: { engine: 'tesseract', model: 'frk', version: '5.3.0' },
        jobId: read.pages[0]!.jobId!,
        attemptNumber: 1,
      },
    });
    expect(written.state).toBe('committed');
  });
  await edit(enginePage, 'ada@archive.example', 'Erste Zeile');
  ben = await edit(enginePage, 'ben@archive.example', 'Erste Zeile.');
  // A page whose text came from tesseract's hOCR, then corrected once.
  const imported = await ingestBatch(
    deps,
    A.ws,
    uploadRequest([
      file(readFileSync(MANIFESTO.image), 'manifesto.png'),
      {
        name: 'transcript',
        value: readFileSync(MANIFESTO.hocr),
        filename: 'manifesto.hocr',
        contentType: 'application/xhtml+xml',
      },
    ]),
  );
  importedPage = imported.pages[0]!.pageId;
  importedItem = imported.pages[0]!.itemId;
  await edit(importedPage, 'ada@archive.example', 'MANIFESTO');
  exportRoute = (await import(
    '../../web/app/api/v1/workspaces/[ws]/pages/[pageId]/export/route'
  )) as unknown as Route;
}, 60_000);

afterAll(async () => {
  const { pool } = await import('../../web/lib/server');
  await pool().end();
  await db?.drop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('I8 provenance in exports', () => {
  it('I8 ALTO Description/Processing names the engine, model and version of the reading, then each human edit with its editor, in order', async () => {
    const alto = xml.parse(await exportOf(enginePage, 'alto'));
    const steps = alto.alto.Description.Processing;
    expect(steps).toHaveLength(3);
    expect(steps[0]).toMatchObject({
      processingCategory: 'contentGeneration',
      processingStepSettings: 'model=frk',
      processingSoftware: { softwareName: 'tesseract', softwareVersion: '5.3.0' },
    });
    expect(steps[0].processingStepDescription).toMatch(
      /^revision 1: read by tesseract 5\.3\.0, model frk, job /,
    );
    expect(steps.slice(1)).toMatchObject([
      {
        processingCategory: 'contentModification',
        processingAgency: 'ada@archive.example',
        processingStepDescription: 'revision 2: edited by ada@archive.example',
      },
      {
        processingCategory: 'contentModification',
        processingAgency: 'ben@archive.example',
        processingStepDescription: 'revision 3: edited by ben@archive.example',
      },
    ]);
    for (const step of steps) {
      expect(Number.isNaN(Date.parse(step.processingDateTime))).toBe(false);
    }
  });

  it('I8 PAGE Metadata carries a processingStep MetadataItem per step (engine, edits) and stays valid against the PAGE 2019 XSD', async () => {
    const body = await exportOf(enginePage, 'page');
    expect(pageSchemaErrors(body)).toEqual([]);
    const page = xml.parse(body);
    expect(page.PcGts.Metadata.Creator).toBe('Quire');
    const items = page.PcGts.Metadata.MetadataItem;
    expect(items.map((i: Record<string, string>) => [i['@type'], i['@name']])).toEqual([
      ['processingStep', 'engine'],
      ['processingStep', 'edit'],
      ['processingStep', 'edit'],
    ]);
    expect(items[0]['@value']).toMatch(/^revision 1: read by tesseract 5\.3\.0, model frk/);
    expect(items[2]['@value']).toBe('revision 3: edited by ben@archive.example');
  });

  it("I8 an imported revision's exports name the file's format and the software it named, then the edit", async () => {
    const alto = xml.parse(await exportOf(importedPage, 'alto'));
    const steps = alto.alto.Description.Processing;
    expect(steps[0]).toMatchObject({
      processingCategory: 'contentGeneration',
      processingStepDescription:
        'revision 1: imported from an hOCR file written by tesseract 5.3.0',
      processingSoftware: { softwareName: 'tesseract 5.3.0' },
    });
    expect(steps[1]).toMatchObject({ processingAgency: 'ada@archive.example' });
    const body = await exportOf(importedPage, 'page');
    expect(pageSchemaErrors(body)).toEqual([]);
    expect(xml.parse(body).PcGts.Metadata.MetadataItem).toHaveLength(2);
  });

  it('R7 the hOCR export names each editor with the account id beside the name, and the IIIF manifest names who last set a line as its creator', async () => {
    const ada = (await findAccountByEmail(db.pool, 'ada@archive.example'))!;
    const hocr = await exportOf(enginePage, 'hocr');
    const story = /<meta name="quire-provenance" content="([^"]*)"\/>/.exec(hocr)?.[1];
    expect(story?.split('; ')).toEqual([
      expect.stringMatching(/^revision 1: read by tesseract 5\.3\.0, model frk/),
      `revision 2: edited by ada@archive.example (account:${ada.id})`,
      `revision 3: edited by ben@archive.example (account:${ben.id})`,
    ]);
    expect(hocr).not.toMatch(/console:account|null/);

    // The imported page's first line, corrected by Ben in the console (its line stamped).
    await edit(importedPage, 'ben@archive.example', 'MANIFESTO.', true);
    const manifestRoute = (await import(
      '../../web/app/iiif/[ws]/[item]/manifest/route'
    )) as unknown as Route;
    const response = await manifestRoute.GET!(
      new Request(`${BASE}/iiif/${A.ws}/${importedItem}/manifest`, {
        headers: { authorization: `Bearer ${A.key}` },
      }),
      { params: Promise.resolve({ ws: String(A.ws), item: importedItem }) },
    );
    expect(response.status).toBe(200);
    const manifest = await response.json();
    const lines = manifest.items[0].annotations[0].items;
    // The first line was edited last by Ben: by name, his account id beneath; the second is
    // the imported file's and names no person.
    expect(lines[0].creator).toEqual({
      id: `urn:quire:account:${ben.id}`,
      type: 'Person',
      name: 'ben@archive.example',
    });
    expect(lines[1].creator).toBeUndefined();
    expect(JSON.stringify(manifest)).not.toMatch(/quire:stateBy|console:account|"null"/);
  });
});
