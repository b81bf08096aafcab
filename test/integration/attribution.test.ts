import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { renderToStaticMarkup } from 'react-dom/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI_ACTOR } from '../../core/actor';
import type { Principal } from '../../core/roles';
import { createAccount, putMember } from '../../db/accounts';
import { type AuditFilter, listAudit } from '../../db/auditLog';
import { listRevisions } from '../../db/pages';
import { createSession, touchSession } from '../../db/sessions';
import { addApiKey, createWorkspace } from '../../db/workspaces';
import { AuditTable } from '../../web/components/AuditTable';
import { RevisionHistory } from '../../web/components/RevisionHistory';
import { configureWeb } from '../../web/lib/server';
import { principalOfSession } from '../../web/lib/session';
import { call, type RouteModule, uploadWithKey } from '../support/api';
import { createTestQuire, type TestQuire, temporalAddress } from '../support/quire';

/**
 * R5: every change names a person. An owner's and an editor's acts (an edit, a publication, a
 * cancel, a re-run, a key made, a member's role changed) and an API key's act are each
 * recorded with the account or key, in the audit log and through the API: the audit listing's
 * `actor {type, id, name}` and a revision's `editedByActor`.
 */
let quire: TestQuire;
let ws: number;
let key: string;
let owner: Principal;
let editor: Principal;

async function memberPrincipal(role: 'owner' | 'editor', name: string): Promise<Principal> {
  const account = await createAccount(quire.db.pool, CLI_ACTOR, {
    email: `${role}@attribution.test`,
    name,
    passwordHash: null,
  });
  await putMember(quire.db.pool, CLI_ACTOR, { workspaceId: ws, accountId: account.id, role });
  const id = await createSession(quire.db.pool, { accountId: account.id, workspaceId: ws }, 600);
  return principalOfSession(await touchSession(quire.db.pool, id, 600))!;
}

beforeAll(async () => {
  quire = await createTestQuire({
    QUIRE_BLOB_DIR: mkdtempSync(join(tmpdir(), 'quire-attribution-')),
    TEMPORAL_ADDRESS: temporalAddress(),
  });
  configureWeb(quire.config);
  const created = await createWorkspace(quire.db.pool, 'Attribution');
  ws = created.workspace.id;
  key = await addApiKey(quire.db.pool, ws, 'catalogue sync');
  owner = await memberPrincipal('owner', 'Olga Owner');
  editor = await memberPrincipal('editor', 'Eda Editor');
}, 60_000);

afterAll(async () => {
  await quire?.close();
});

/**
 * A page uploaded through the API with the workspace's key, its job canceled by the editor,
 * and its line saved by the editor in the console: the acts whose authors the tests read.
 */
async function uploadedAndEdited(fileName: string, text: string) {
  const upload = await uploadWithKey(ws, key, fileName);
  expect(upload.status).toBe(201);
  const { pageId, jobId } = upload.json.pages[0];
  const jobs = await import('../../web/services/jobs');
  const pages = await import('../../web/services/pages');
  await jobs.cancelJob(editor, jobId);
  return {
    pageId,
    jobId,
    batchId: upload.json.batchId as string,
    edit: () =>
      pages.editPage(editor, {
        pageId,
        expectedRevision: 0,
        edit: {
          segments: [
            { index: 0, text, target: { kind: 'xywh', box: { x: 0, y: 0, w: 40, h: 20 } } },
          ],
        },
        channel: 'console',
      }),
  };
}

describe('attribution (R5)', () => {
  it('R5 edits, publications, cancels, re-runs, key and member changes name the account or key, in the audit log and the API', async () => {
    const { pageId, jobId, batchId, edit } = await uploadedAndEdited('page.png', 'Baptisms, 1791');
    const jobs = await import('../../web/services/jobs');
    const pages = await import('../../web/services/pages');
    const people = await import('../../web/services/people');

    await jobs.rerunJob(editor, jobId);
    const edited = await edit();
    expect(edited.state).toBe('committed');
    await pages.publishPage(owner, { pageId, expectedRevision: 1 });
    const made = await people.createWorkspaceKey(owner, { name: 'exporter', scope: 'read' });
    await people.changeRole(owner, { accountId: editor.actor.id, role: 'reviewer' });

    const audit: RouteModule = await import('../../web/app/api/v1/workspaces/[ws]/audit/route');
    const listed = await call(audit, 'GET', `/workspaces/${ws}/audit`, { ws: String(ws) }, { key });
    expect(listed.status).toBe(200);
    const byAction = Object.fromEntries(
      listed.json.entries.map((e: { action: string; actor: unknown }) => [e.action, e.actor]),
    );
    const eda = { type: 'account', id: editor.actor.id, name: 'Eda Editor' };
    const olga = { type: 'account', id: owner.actor.id, name: 'Olga Owner' };
    expect(byAction['job.cancel']).toMatchObject(eda);
    expect(byAction['job.rerun']).toMatchObject(eda);
    expect(byAction['page.publish']).toMatchObject(olga);
    expect(byAction['api_key.create']).toMatchObject(olga);
    expect(byAction['member.change_role']).toMatchObject(olga);

    // A key's own act names the key by the name its owner gave it.
    const cancelRoute: RouteModule = await import(
      '../../web/app/api/v1/workspaces/[ws]/batches/[batchId]/cancel/route'
    );
    const canceled = await call(
      cancelRoute,
      'POST',
      `/workspaces/${ws}/batches/${batchId}/cancel`,
      { ws: String(ws), batchId },
      { key },
    );
    expect(canceled.status).toBe(200);
    const again = await call(audit, 'GET', `/workspaces/${ws}/audit`, { ws: String(ws) }, { key });
    expect(again.json.entries[0]).toMatchObject({
      action: 'batch.cancel',
      actor: { type: 'apiKey', name: 'catalogue sync' },
    });

    // The revision says who wrote it, through the API.
    const revisions: RouteModule = await import(
      '../../web/app/api/v1/workspaces/[ws]/pages/[pageId]/revisions/route'
    );
    const history = await call(
      revisions,
      'GET',
      `/workspaces/${ws}/pages/${pageId}/revisions`,
      { ws: String(ws), pageId: String(pageId) },
      { key },
    );
    expect(history.status).toBe(200);
    const first = JSON.stringify(history.json);
    expect(first).toContain(`"editedBy":"console:account:${editor.actor.id}"`);
    expect(first).toContain(
      JSON.stringify({ type: 'account', id: editor.actor.id, name: 'Eda Editor' }),
    );
    expect(made.key).toMatch(/^qk_/);
  }, 60_000);

  it("R7 an account's act shows the account's name: in the console's audit list and revision history, and in an export", async () => {
    const { pageId, jobId, edit } = await uploadedAndEdited('named.png', 'Burials, 1792');
    const edited = await edit();
    expect(edited.state).toBe('committed');
    const internal = /console:|account:|api-key:|API key null|account \d/;
    // What a person reads: the text of the markup. The id stays beneath, in attributes.
    const shown = (html: string) => html.replace(/<[^>]+>/g, ' ');
    const beneath = `title="account ${editor.actor.id}" data-actor="account:${editor.actor.id}"`;

    // The audit page (console) draws the audit list with AuditTable.
    const { entries } = await listAudit(quire.db.pool, { workspaceId: ws, limit: 50 });
    const cancel = entries.find((e) => e.action === 'job.cancel' && e.target.endsWith(jobId));
    expect(cancel).toBeDefined();
    const auditHtml = renderToStaticMarkup(AuditTable({ entries: [cancel!], caption: 'audit' }));
    expect(auditHtml).toContain('Eda Editor');
    expect(shown(auditHtml)).not.toMatch(internal);
    expect(auditHtml).toContain(beneath);

    // The page view's revision history.
    const revisions = (await listRevisions(quire.db.pool, ws, pageId, { limit: 10 }))!;
    const historyHtml = renderToStaticMarkup(
      RevisionHistory({ revisions, publishedRevision: null }),
    );
    expect(historyHtml).toContain('Eda Editor');
    expect(shown(historyHtml)).not.toMatch(internal);
    expect(historyHtml).toContain(beneath);

    // An export's provenance names the person who edited.
    const exportRoute: RouteModule = await import(
      '../../web/app/api/v1/workspaces/[ws]/pages/[pageId]/export/route'
    );
    const alto = await call(
      exportRoute,
      'GET',
      `/workspaces/${ws}/pages/${pageId}/export?format=alto`,
      { ws: String(ws), pageId: String(pageId) },
      { key },
    );
    expect(alto.status).toBe(200);
    expect(alto.text).toContain('<processingAgency>Eda Editor</processingAgency>');
    expect(alto.text).toContain('edited by Eda Editor');
    // The account stays beside the name, where each format keeps such a thing.
    expect(alto.text).toContain(
      `<processingStepSettings>account=${editor.actor.id}</processingStepSettings>`,
    );
    expect(alto.text).not.toMatch(/console:|account:/);
    // PAGE says who set each line's state, by name too.
    const pageXml = await call(
      exportRoute,
      'GET',
      `/workspaces/${ws}/pages/${pageId}/export?format=page`,
      { ws: String(ws), pageId: String(pageId) },
      { key },
    );
    expect(pageXml.status).toBe(200);
    expect(pageXml.text).toContain('comments="edited by Eda Editor at ');
    expect(pageXml.text).toContain('value="revision 1: edited by Eda Editor"');
    expect(pageXml.text).toContain(
      `<Labels externalModel="quire"><Label type="account" value="${editor.actor.id}"/></Labels>`,
    );
    expect(pageXml.text).not.toMatch(/console:|account:/);
  }, 60_000);
});

describe('the audit log names the person of every change (R10)', () => {
  /** The rows of one action on one target, as the audit listing gives them. */
  const rowsOf = async (action: string, target: string, filter: Partial<AuditFilter> = {}) =>
    (await listAudit(quire.db.pool, { workspaceId: ws, limit: 200, ...filter })).entries.filter(
      (e) => e.action === action && e.target === target,
    );

  it('R10 uploads, job starts, edits and verifications (counted), item deletes and webhook changes each have their row with the account or key', async () => {
    const jobs = await import('../../web/services/jobs');
    const pages = await import('../../web/services/pages');
    const webhooks = await import('../../web/services/webhooks');
    const sync = { type: 'apiKey', name: 'catalogue sync' };
    const eda = { type: 'account', id: editor.actor.id, name: 'Eda Editor' };
    const olga = { type: 'account', id: owner.actor.id, name: 'Olga Owner' };

    // An upload through the API with the key: its batch, its pages and jobs, by the key.
    const upload = await uploadWithKey(ws, key, 'audited.png');
    expect(upload.status).toBe(201);
    const { pageId, jobId, itemId } = upload.json.pages[0];
    const [uploaded] = await rowsOf('batch.create', `batches/${upload.json.batchId}`);
    expect(uploaded?.actor).toMatchObject(sync);
    expect(uploaded?.after).toEqual({ pages: 1, items: 1, jobs: 1 });

    // A job started on its own, by the editor.
    await jobs.cancelJob(editor, jobId);
    const started = await jobs.startJob(editor, { pageId });
    const [start] = await rowsOf('job.start', `transcription-jobs/${started.jobId}`);
    expect(start?.actor).toMatchObject(eda);
    await jobs.cancelJob(editor, started.jobId);

    // The editor's revision edits one line; the owner's verifies both: counts per revision.
    const box = (y: number) => ({ kind: 'xywh' as const, box: { x: 0, y, w: 40, h: 10 } });
    const first = await pages.editPage(editor, {
      pageId,
      expectedRevision: 0,
      edit: {
        segments: [
          { index: 0, text: 'Marriages, 1790', target: box(0) },
          { index: 1, text: 'Banns read', target: box(10) },
        ],
      },
      channel: 'api',
    });
    expect(first.state).toBe('committed');
    const second = await pages.editPage(editor, {
      pageId,
      expectedRevision: 1,
      edit: { texts: [{ index: 1, text: 'Banns read thrice' }] },
      channel: 'console',
    });
    expect(second.state).toBe('committed');
    const verified = await pages.editPage(owner, {
      pageId,
      expectedRevision: 2,
      edit: { verify: [0, 1] },
      channel: 'console',
    });
    expect(verified.state).toBe('committed');
    const edits = await rowsOf('page.edit', `pages/${pageId}`);
    expect(edits.map((e) => [e.actor.name, e.before, e.after]).reverse()).toEqual([
      ['Eda Editor', { revision: 0 }, { revision: 1, edited: 2, verified: 0, other: 0 }],
      ['Eda Editor', { revision: 1 }, { revision: 2, edited: 1, verified: 0, other: 0 }],
      ['Olga Owner', { revision: 2 }, { revision: 3, edited: 0, verified: 2, other: 0 }],
    ]);

    // DELETE /items/{id} with the write key: 200, and the row names the key and the pages.
    const itemRoute: RouteModule = await import(
      '../../web/app/api/v1/workspaces/[ws]/items/[itemId]/route'
    );
    const deleted = await call(
      itemRoute,
      'DELETE',
      `/workspaces/${ws}/items/${itemId}`,
      { ws: String(ws), itemId },
      { key },
    );
    expect(deleted.status).toBe(200);
    const [gone] = await rowsOf('item.delete', `items/${itemId}`);
    expect(gone?.actor).toMatchObject(sync);
    expect(gone?.before).toEqual({ pages: [pageId] });

    // A webhook made and deleted by the owner; the secret never reaches the log.
    const settings = { ...quire.config, QUIRE_WEBHOOK_ALLOW_HOSTS: 'localhost' };
    const secret = 'a-webhook-secret-that-is-long-enough-0123';
    const hook = await webhooks.createWebhook(
      owner,
      { url: 'https://localhost/audited-hook', secret, eventTypes: null },
      settings,
    );
    await webhooks.deleteWebhook(owner, hook.id);
    const [made] = await rowsOf('webhook.create', `webhooks/${hook.id}`);
    const [dropped] = await rowsOf('webhook.delete', `webhooks/${hook.id}`);
    expect(made?.actor).toMatchObject(olga);
    expect(made?.after).toMatchObject({ url: 'https://localhost/audited-hook' });
    expect(JSON.stringify(made)).not.toContain(secret);
    expect(dropped?.actor).toMatchObject(olga);
  }, 60_000);

  it('R10 the log filters by person, by action and by days', async () => {
    const byEda = await listAudit(quire.db.pool, {
      workspaceId: ws,
      limit: 200,
      actor: { kind: 'account', id: editor.actor.id },
    });
    expect(byEda.entries.length).toBeGreaterThan(0);
    expect(byEda.entries.every((e) => e.actor.name === 'Eda Editor')).toBe(true);
    const { rows } = await quire.db.pool.query(
      'SELECT id FROM api_keys WHERE workspace_id = $1 AND label = $2',
      [ws, 'catalogue sync'],
    );
    const byKey = await listAudit(quire.db.pool, {
      workspaceId: ws,
      limit: 200,
      actor: { kind: 'apiKey', id: Number(rows[0].id) },
    });
    expect(byKey.entries.length).toBeGreaterThan(0);
    expect(byKey.entries.every((e) => e.actor.name === 'catalogue sync')).toBe(true);
    const edits = await listAudit(quire.db.pool, {
      workspaceId: ws,
      limit: 200,
      action: 'page.edit',
    });
    expect(edits.entries.length).toBeGreaterThan(0);
    expect(edits.entries.every((e) => e.action === 'page.edit')).toBe(true);
    const today = new Date(new Date().toISOString().slice(0, 10));
    const tomorrow = new Date(today.getTime() + 86_400_000);
    const all = await listAudit(quire.db.pool, { workspaceId: ws, limit: 200 });
    const sinceToday = await listAudit(quire.db.pool, {
      workspaceId: ws,
      limit: 200,
      from: today,
      to: tomorrow,
    });
    expect(sinceToday.entries.length).toBe(all.entries.length);
    const before = await listAudit(quire.db.pool, { workspaceId: ws, limit: 200, to: today });
    expect(before.entries).toEqual([]);
  });

  it('R10 GET /audit narrows by person, action and days through the API; a bad filter value is a 400 invalid_query', async () => {
    // Rows of this test's own: the key's upload, and a key the owner makes.
    const people = await import('../../web/services/people');
    expect((await uploadWithKey(ws, key, 'filtered.png')).status).toBe(201);
    await people.createWorkspaceKey(owner, { name: 'filter check', scope: 'read' });
    const audit: RouteModule = await import('../../web/app/api/v1/workspaces/[ws]/audit/route');
    const get = (query: string) =>
      call(audit, 'GET', `/workspaces/${ws}/audit?${query}`, { ws: String(ws) }, { key });
    const all = await get('pageSize=200');
    expect(all.status).toBe(200);
    const actions = new Set(all.json.entries.map((e: { action: string }) => e.action));
    expect(actions.size).toBeGreaterThan(1);

    const byOwner = await get(`pageSize=200&person=account:${owner.actor.id}`);
    expect(byOwner.status).toBe(200);
    expect(byOwner.json.entries.length).toBeGreaterThan(0);
    expect(byOwner.json.entries.length).toBeLessThan(all.json.entries.length);
    for (const e of byOwner.json.entries) {
      expect(e.actor).toMatchObject({ type: 'account', id: owner.actor.id });
    }
    const { rows } = await quire.db.pool.query(
      'SELECT id FROM api_keys WHERE workspace_id = $1 AND label = $2',
      [ws, 'catalogue sync'],
    );
    const byKey = await get(`pageSize=200&person=apiKey:${rows[0].id}`);
    expect(byKey.json.entries.length).toBeGreaterThan(0);
    for (const e of byKey.json.entries) {
      expect(e.actor).toMatchObject({ type: 'apiKey', name: 'catalogue sync' });
    }

    const uploads = await get('pageSize=200&action=batch.create');
    expect(uploads.json.entries.length).toBeGreaterThan(0);
    expect(uploads.json.entries.every((e: { action: string }) => e.action === 'batch.create')).toBe(
      true,
    );
    const ownerKeys = await get(`action=api_key.create&person=account:${owner.actor.id}`);
    expect(ownerKeys.json.entries.length).toBeGreaterThan(0);
    expect(
      ownerKeys.json.entries.every(
        (e: { action: string; actor: { id: number } }) =>
          e.action === 'api_key.create' && e.actor.id === owner.actor.id,
      ),
    ).toBe(true);

    const today = new Date().toISOString().slice(0, 10);
    const yesterday = new Date(Date.now() - 86_400_000).toISOString().slice(0, 10);
    const span = await get(`pageSize=200&from=${today}&to=${today}`);
    expect(span.json.entries.length).toBe(all.json.entries.length);
    const earlier = await get(`pageSize=200&to=${yesterday}`);
    expect(earlier.status).toBe(200);
    expect(earlier.json.entries).toEqual([]);

    for (const bad of [
      'person=account:0',
      'person=someone',
      'person=operatorKey:1',
      'action=page.eat',
      'from=2026-02-30',
      'to=yesterday',
      `from=${today}&to=${yesterday}`,
    ]) {
      const refused = await get(bad);
      expect({ bad, status: refused.status, code: refused.json.error?.code }).toEqual({
        bad,
        status: 400,
        code: 'invalid_query',
      });
    }
  });
});
