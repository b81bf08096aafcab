import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI_ACTOR } from '../../core/actor';
import { DomainError } from '../../core/errors';
import {
  ACTIONS,
  type Action,
  KEY_SCOPES,
  type Principal,
  permits,
  ROLE_MATRIX,
  ROLES,
  type Role,
} from '../../core/roles';
import { createAccount, putMember } from '../../db/accounts';
import { createInvitation } from '../../db/invitations';
import { createSession, touchSession } from '../../db/sessions';
import { createSubscription, fanOutEvents } from '../../db/webhooks';
import { addApiKey, authenticateApiKey, createWorkspace } from '../../db/workspaces';
import { configureWeb } from '../../web/lib/server';
import { principalOfSession, SESSION_COOKIE } from '../../web/lib/session';
import { call, type RouteModule, uploadWithKey } from '../support/api';
import { seedPage } from '../support/pages';
import { createTestQuire, type TestQuire, temporalAddress } from '../support/quire';
import { file, png, uploadRequest } from '../support/uploadFixtures';
import { commitEvent } from '../support/webhookFixtures';

/**
 * R1: the role matrix (core/roles.ts ROLE_MATRIX), each role and each key scope against each
 * state-changing use case, read from that same table: allowed (the act passes the gate; it
 * may still be refused for its own reasons, e.g. a stale revision), 403 `forbidden` with
 * nothing changed, and 404 for another workspace's ids. Members act through the services and
 * the console's own route with a real session row; keys through the /api/v1 routes.
 */
let quire: TestQuire;
let A: {
  ws: number;
  key: string;
  pageId: number;
  jobId: string;
  batchId: string;
  webhookId: string;
  deliveryId: number;
};
let B: { ws: number; key: string };
const members = new Map<Role, { principal: Principal; cookie: string }>();
let outsider: Principal;

type Outcome = 'allowed' | 'forbidden' | 'not_found';

const outcomeOfError = (error: unknown): Outcome => {
  if (error instanceof DomainError && error.kind === 'forbidden') return 'forbidden';
  if (error instanceof DomainError && error.kind === 'not_found') return 'not_found';
  if (error instanceof DomainError) return 'allowed';
  throw error;
};
const outcomeOfStatus = (status: number): Outcome =>
  status === 403 ? 'forbidden' : status === 404 ? 'not_found' : 'allowed';

async function attempt(work: () => Promise<unknown>): Promise<Outcome> {
  try {
    const result = await work();
    if (result instanceof Response) return outcomeOfStatus(result.status);
    return 'allowed';
  } catch (error) {
    return outcomeOfError(error);
  }
}

async function memberOf(ws: number, role: Role, tag: string) {
  const account = await createAccount(quire.db.pool, CLI_ACTOR, {
    email: `${role}-${tag}@roles.test`,
    name: `${role} ${tag}`,
    passwordHash: null,
  });
  await putMember(quire.db.pool, CLI_ACTOR, { workspaceId: ws, accountId: account.id, role });
  const id = await createSession(quire.db.pool, { accountId: account.id, workspaceId: ws }, 3600);
  const principal = principalOfSession(await touchSession(quire.db.pool, id, 3600))!;
  return { principal, cookie: `${SESSION_COOKIE}=${id}`, accountId: account.id };
}

const services = {
  jobs: () => import('../../web/services/jobs'),
  pages: () => import('../../web/services/pages'),
  webhooks: () => import('../../web/services/webhooks'),
  providers: () => import('../../web/services/providers'),
  items: () => import('../../web/services/items'),
  people: () => import('../../web/services/people'),
  archive: () => import('../../web/services/archive'),
  workspaces: () => import('../../web/services/workspaces'),
};

/**
 * One invocation per state-changing action, for a member principal of `target`'s workspace or
 * of another. Targets are real rows of A; each invocation makes what it consumes (a member to
 * remove, a key to revoke, a webhook to delete), so the order of the cases does not matter.
 */
type Invoke = (p: Principal, cookie: string, target: string | number) => Promise<unknown>;
const INVOKE: Record<Exclude<Action, 'workspace.read'>, Invoke> = {
  'batch.create': async (_p, cookie) => {
    const route = await import('../../web/app/console-api/batches/route');
    // R6: a console change comes from the console's own origin.
    const request = uploadRequest([file(png(40, 20), 'page.png')], {
      cookie,
      origin: new URL(quire.config.QUIRE_PUBLIC_URL).origin,
    });
    return route.POST(request);
  },
  'batch.cancel': async (p, _c, target) => (await services.jobs()).cancelBatch(p, String(target)),
  'job.start': async (p) => (await services.jobs()).startJob(p, { pageId: A.pageId }),
  'job.cancel': async (p) => (await services.jobs()).cancelJob(p, A.jobId),
  'job.rerun': async (p) => (await services.jobs()).rerunJob(p, A.jobId),
  'item.delete': async (p, _c, target) => (await services.items()).deleteItem(p, String(target)),
  'collection.create': async (p) =>
    (await services.archive()).createCollection(p, { title: 'made in a test' }),
  'collection.update': async (p, _c, target) =>
    (await services.archive()).updateCollection(p, Number(target), { title: 'renamed' }),
  'collection.delete': async (p, _c, target) =>
    (await services.archive()).deleteCollection(p, Number(target)),
  'item.update': async (p, _c, target) =>
    (await services.archive()).updateItem(p, String(target), { title: 'titled in a test' }),
  'item.arrange': async (p, _c, target) =>
    (await services.archive()).arrangePages(p, String(target), [A.pageId]),
  'workspace.settings': async (p) =>
    (await services.workspaces()).updateRecordingRetention(p, 'keep'),
  // A stale revision: an allowed edit is answered `stale` and writes nothing.
  'page.edit': async (p) =>
    (await services.pages()).editPage(p, {
      pageId: A.pageId,
      expectedRevision: 999,
      edit: { texts: [{ index: 0, text: 'x' }] },
      channel: 'console',
    }),
  'page.publish': async (p) =>
    (await services.pages()).publishPage(p, { pageId: A.pageId, expectedRevision: 999 }),
  'provider.resume': async (p) => (await services.providers()).resumeProvider(p, 'simulated'),
  // Refused for its URL after the gate: nothing is created.
  'webhook.create': async (p) =>
    (await services.webhooks()).createWebhook(
      p,
      { url: 'http://not-https.example', secret: 'x'.repeat(32), eventTypes: null },
      quire.config,
    ),
  'webhook.delete': async (p, _c, target) =>
    (await services.webhooks()).deleteWebhook(p, String(target)),
  'webhook.replay': async (p) =>
    (await services.webhooks()).replayDelivery(p, {
      deliveryId: A.deliveryId,
      webhookId: A.webhookId,
    }),
  'member.invite': async (p) =>
    (await services.people()).inviteMember(p, { email: 'new@roles.test', role: 'viewer' }),
  'member.revoke_invitation': async (p, _c, target) =>
    (await services.people()).revokeWorkspaceInvitation(p, Number(target)),
  'member.change_role': async (p, _c, target) =>
    (await services.people()).changeRole(p, { accountId: Number(target), role: 'reviewer' }),
  'member.remove': async (p, _c, target) =>
    (await services.people()).removeWorkspaceMember(p, Number(target)),
  'api_key.create': async (p) =>
    (await services.people()).createWorkspaceKey(p, { name: 'made in a test', scope: 'read' }),
  'api_key.revoke': async (p, _c, target) =>
    (await services.people()).revokeWorkspaceKey(p, Number(target)),
};

/** What an invocation consumes, made before anything is measured. */
const PREPARE: Partial<Record<Action, () => Promise<string | number>>> = {
  'webhook.delete': () => freshWebhook(),
  'item.delete': () => freshItem(),
  'collection.update': () => freshCollection(),
  'collection.delete': () => freshCollection(),
  'item.update': () => freshItem(),
  'item.arrange': () => freshItem(),
  'batch.cancel': () => freshBatch(),
  'member.revoke_invitation': () => freshInvitation(),
  'member.change_role': () => freshMember(),
  'member.remove': () => freshMember(),
  'api_key.revoke': () => freshKey(),
};

/** The actions whose target is a row of A (the rest create in the caller's own workspace). */
const TARGETS_A_ROW: ReadonlySet<Action> = new Set([
  'batch.cancel',
  'job.start',
  'job.cancel',
  'job.rerun',
  'item.delete',
  'collection.update',
  'collection.delete',
  'item.update',
  'item.arrange',
  'page.edit',
  'page.publish',
  'webhook.delete',
  'webhook.replay',
  'member.revoke_invitation',
  'member.change_role',
  'member.remove',
  'api_key.revoke',
]);

let counter = 0;
async function freshMember(): Promise<number> {
  counter += 1;
  const account = await createAccount(quire.db.pool, CLI_ACTOR, {
    email: `target-${counter}@roles.test`,
    name: `target ${counter}`,
    passwordHash: null,
  });
  await putMember(quire.db.pool, CLI_ACTOR, {
    workspaceId: A.ws,
    accountId: account.id,
    role: 'viewer',
  });
  return account.id;
}
/** A pending invitation of A, made by A's owner. */
async function freshInvitation(): Promise<number> {
  counter += 1;
  const owner = members.get('owner')!.principal.actor;
  const { invitation } = await createInvitation(
    quire.db.pool,
    { kind: 'account', id: owner.id, name: owner.name },
    { workspaceId: A.ws, email: `invited-${counter}@roles.test`, role: 'viewer', ttlSeconds: 3600 },
  );
  return invitation.id;
}
async function freshKey(): Promise<number> {
  await addApiKey(quire.db.pool, A.ws, 'to revoke');
  const { rows } = await quire.db.pool.query(
    'SELECT max(id) AS id FROM api_keys WHERE workspace_id = $1',
    [A.ws],
  );
  return rows[0].id;
}
async function freshWebhook(): Promise<string> {
  counter += 1;
  const created = await createSubscription(quire.db.pool, quire.config.QUIRE_SECRET_KEY, {
    workspaceId: A.ws,
    url: `https://receiver.example/hook-${counter}`,
    secret: 's'.repeat(32),
    eventTypes: null,
  });
  return created.id;
}
async function freshCollection(): Promise<number> {
  counter += 1;
  const { createCollection } = await import('../../db/collections');
  return (await createCollection(quire.db.pool, CLI_ACTOR, A.ws, { title: `box ${counter}` })).id;
}
async function freshItem(): Promise<string> {
  counter += 1;
  await seedPage(quire.db.pool, { workspaceId: A.ws, itemId: `item-to-delete-${counter}` });
  return `item-to-delete-${counter}`;
}
/** A batch of its own: cancelling a batch releases its pages that have no text yet. */
async function freshBatch(): Promise<string> {
  return (await uploadAsKey(A.ws, A.key)).json.batchId;
}
async function uploadAsKey(ws: number, key: string) {
  const upload = await uploadWithKey(ws, key);
  expect(upload.status).toBe(201);
  return upload;
}

/** Every row a refused act could have written, counted (the audit log, jobs, pages, keys, members). */
async function footprint(): Promise<string> {
  const { rows } = await quire.db.pool.query(`SELECT
      (SELECT count(*) FROM audit_log) AS audit, (SELECT count(*) FROM transcription_jobs) AS jobs,
      (SELECT count(*) FROM transcription_jobs WHERE status = 'canceled') AS canceled,
      (SELECT count(*) FROM pages WHERE deleted_at IS NULL) AS pages,
      (SELECT count(*) FROM page_revisions) AS revisions,
      (SELECT count(*) FROM invitations) AS invitations,
      (SELECT count(*) FROM invitations WHERE revoked_at IS NOT NULL) AS revoked_invitations,
      (SELECT count(*) FROM api_keys WHERE revoked_at IS NULL) AS keys,
      (SELECT count(*) FROM workspace_members) AS members,
      (SELECT string_agg(role, ',' ORDER BY workspace_id, account_id) FROM workspace_members) AS roles,
      (SELECT count(*) FROM webhook_subscriptions) AS webhooks,
      (SELECT count(*) FROM webhook_deliveries WHERE status = 'pending') AS pending_deliveries,
      (SELECT count(*) FROM pages WHERE published_revision IS NOT NULL) AS published`);
  return JSON.stringify(rows[0]);
}

beforeAll(async () => {
  quire = await createTestQuire({
    QUIRE_BLOB_DIR: mkdtempSync(join(tmpdir(), 'quire-roles-blobs-')),
    TEMPORAL_ADDRESS: temporalAddress(),
  });
  configureWeb(quire.config);
  const a = await createWorkspace(quire.db.pool, 'Roles A');
  const b = await createWorkspace(quire.db.pool, 'Roles B');
  const upload = await uploadAsKey(a.workspace.id, a.apiKey);
  const webhook = await freshWebhookFor(a.workspace.id);
  // A pending delivery: an allowed replay is refused for its state, and changes nothing.
  await commitEvent(quire.db.pool, a.workspace.id);
  await fanOutEvents(quire.db.pool);
  const delivery = await quire.db.pool.query(
    'SELECT id FROM webhook_deliveries WHERE subscription_id = $1',
    [webhook],
  );
  A = {
    ws: a.workspace.id,
    key: a.apiKey,
    pageId: upload.json.pages[0].pageId,
    jobId: upload.json.pages[0].jobId,
    batchId: upload.json.batchId,
    webhookId: webhook,
    deliveryId: delivery.rows[0].id,
  };
  B = { ws: b.workspace.id, key: b.apiKey };
  for (const role of ROLES) members.set(role, await memberOf(A.ws, role, 'a'));
  outsider = (await memberOf(B.ws, 'owner', 'b')).principal;
}, 120_000);

async function freshWebhookFor(ws: number): Promise<string> {
  return (
    await createSubscription(quire.db.pool, quire.config.QUIRE_SECRET_KEY, {
      workspaceId: ws,
      url: 'https://receiver.example/a',
      secret: 's'.repeat(32),
      eventTypes: null,
    })
  ).id;
}

afterAll(async () => {
  await quire?.close();
});

describe('the role matrix (R1)', () => {
  it('R1 the matrix names every role for every action and gives owners all that editors have', () => {
    for (const action of ACTIONS) {
      const rule = ROLE_MATRIX[action];
      expect(rule.roles.every((r) => ROLES.includes(r))).toBe(true);
      if (rule.roles.includes('editor')) expect(rule.roles).toContain('owner');
    }
  });

  for (const role of ROLES) {
    it(`R1 a ${role} is allowed or refused 403 on each state-changing action exactly as ROLE_MATRIX says, and a refusal changes nothing`, async () => {
      const { principal, cookie } = members.get(role)!;
      const got: Record<string, Outcome> = {};
      const expected: Record<string, Outcome> = {};
      for (const [action, invoke] of Object.entries(INVOKE) as Array<[Action, Invoke]>) {
        expected[action] = permits({ kind: 'role', role }, action) ? 'allowed' : 'forbidden';
        const target = (await PREPARE[action]?.()) ?? '';
        const before = await footprint();
        got[action] = await attempt(() => invoke(principal, cookie, target));
        if (got[action] === 'forbidden') {
          expect.soft(await footprint(), `${role} ${action} changed something`).toBe(before);
        }
      }
      expect(got).toEqual(expected);
    }, 120_000);
  }

  it("R1 a member of another workspace gets 404 for this workspace's rows, on every action that names one", async () => {
    const got: Record<string, Outcome> = {};
    for (const action of TARGETS_A_ROW) {
      const target = (await PREPARE[action]?.()) ?? '';
      got[action] = await attempt(() =>
        INVOKE[action as Exclude<Action, 'workspace.read'>](outsider, 'none=1', target),
      );
    }
    expect(got).toEqual(Object.fromEntries([...TARGETS_A_ROW].map((a) => [a, 'not_found'])));
  }, 120_000);

  it('R1 API keys: a read-scoped key gets 403 on every state-changing route, a write key passes, a foreign key gets 404', async () => {
    const readKey = await addApiKey(quire.db.pool, A.ws, 'reader', { scope: 'read' });
    expect((await authenticateApiKey(quire.db.pool, readKey))?.grant).toEqual({
      kind: 'key',
      scope: 'read',
    });
    const ws = String(A.ws);
    const batchId = await freshBatch();
    const routes: Array<{
      action: Action;
      route: () => Promise<RouteModule>;
      method: string;
      path: string;
      params: Record<string, string>;
      body?: unknown;
    }> = [
      {
        action: 'job.start',
        route: () => import('../../web/app/api/v1/workspaces/[ws]/transcription-jobs/route'),
        method: 'POST',
        path: 'transcription-jobs',
        params: { ws },
        body: { pageId: A.pageId },
      },
      {
        action: 'job.cancel',
        route: () =>
          import('../../web/app/api/v1/workspaces/[ws]/transcription-jobs/[jobId]/cancel/route'),
        method: 'POST',
        path: `transcription-jobs/${A.jobId}/cancel`,
        params: { ws, jobId: A.jobId },
      },
      {
        action: 'batch.cancel',
        route: () => import('../../web/app/api/v1/workspaces/[ws]/batches/[batchId]/cancel/route'),
        method: 'POST',
        path: `batches/${batchId}/cancel`,
        params: { ws, batchId },
      },
      {
        action: 'page.publish',
        route: () => import('../../web/app/api/v1/workspaces/[ws]/pages/[pageId]/publish/route'),
        method: 'POST',
        path: `pages/${A.pageId}/publish`,
        params: { ws, pageId: String(A.pageId) },
        body: { expectedRevision: 999 },
      },
      {
        action: 'webhook.create',
        route: () => import('../../web/app/api/v1/workspaces/[ws]/webhooks/route'),
        method: 'POST',
        path: 'webhooks',
        params: { ws },
        body: { url: 'http://not-https.example', secret: 'x'.repeat(32) },
      },
      {
        action: 'webhook.delete',
        route: () => import('../../web/app/api/v1/workspaces/[ws]/webhooks/[webhookId]/route'),
        method: 'DELETE',
        path: `webhooks/${A.webhookId}`,
        params: { ws, webhookId: A.webhookId },
      },
      {
        action: 'provider.resume',
        route: () => import('../../web/app/api/v1/workspaces/[ws]/providers/[name]/resume/route'),
        method: 'POST',
        path: 'providers/simulated/resume',
        params: { ws, name: 'simulated' },
      },
    ];
    for (const scope of KEY_SCOPES) {
      const key = scope === 'read' ? readKey : await addApiKey(quire.db.pool, A.ws, 'writer');
      for (const r of routes) {
        // The webhook is deleted by an allowed call; the write key runs last on it.
        const before = await footprint();
        const res = await call(await r.route(), r.method, `/workspaces/${ws}/${r.path}`, r.params, {
          key,
          body: r.body,
        });
        const want = permits({ kind: 'key', scope }, r.action) ? 'allowed' : 'forbidden';
        expect.soft(outcomeOfStatus(res.status), `${scope} key ${r.action}`).toBe(want);
        if (want === 'forbidden') {
          expect(res.json.error.code).toBe('forbidden');
          expect(await footprint()).toBe(before);
        }
      }
    }
    for (const r of routes) {
      const res = await call(await r.route(), r.method, `/workspaces/${ws}/${r.path}`, r.params, {
        key: B.key,
        body: r.body,
      });
      expect.soft(res.status, `foreign key ${r.action}`).toBe(404);
    }
  }, 120_000);
});
