import { readFileSync } from 'node:fs';
import type { Page } from 'playwright-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { CLI_ACTOR } from '../../core/actor';
import { type Action, permits, ROLES, type Role } from '../../core/roles';
import { createAccount, putMember } from '../../db/accounts';
import { createCollection } from '../../db/collections';
import { createSession } from '../../db/sessions';
import { createSubscription } from '../../db/webhooks';
import { createWorkspace } from '../../db/workspaces';
import { screenshots } from '../support/browser';
import { CONSOLE_SECRET_KEY, consoleStack } from '../support/consoleStack';
import { KANT } from '../support/interchange';
import { file, multipartBody, png } from '../support/uploadFixtures';

/**
 * R8, R7, R10 in Debian's Chromium against a real `next start` on PostgreSQL. Each role
 * (owner, editor, reviewer, viewer) signs in and walks the console: every form and button
 * that acts carries `data-act`, and each one offered is an act core/roles.ts allows the role.
 * Acts a role may not take, posted to their server actions anyway (the owner's own requests,
 * replayed with another role's session), answer 403 and leave no stack in the log. The audit
 * page and the revision history name the person, and an export's provenance does too.
 */
let ws: number;
let apiKey: string;
const people = new Map<Role, { id: number; name: string; cookie: string }>();
let fixture: {
  collectionId: number;
  itemId: string;
  pageId: number;
  jobId: string;
  batchId: string;
  webhookId: string;
};

/**
 * The acts the walked pages can offer a role that may take them (a provider's resume and a
 * delivery's replay need a fault first, an invitation's revoke a pending invitation).
 */
const OFFERED_ON_WALK: readonly Action[] = [
  'batch.create',
  'batch.cancel',
  'job.cancel',
  'job.rerun',
  'collection.create',
  'collection.update',
  'collection.delete',
  'item.update',
  'item.arrange',
  'page.edit',
  'page.publish',
  'webhook.create',
  'webhook.delete',
  'member.invite',
  'member.change_role',
  'member.remove',
  'api_key.create',
  'api_key.revoke',
];

async function upload(key: string, parts: Parameters<typeof multipartBody>[0]) {
  const body = multipartBody(parts);
  const response = await fetch(`${stack.web.url}/api/v1/workspaces/${ws}/batches`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${key}`,
      'content-type': 'multipart/form-data; boundary=----quire-test-boundary-7c1d',
    },
    body: new Uint8Array(body),
  });
  expect(response.status).toBe(201);
  return response.json();
}

/** A browser page signed in as `role` (its session row made here, as sign-in makes one). */
function signedIn(role: Role): Promise<Page> {
  return stack.withSessionCookie(people.get(role)!.cookie);
}

/** The acts the current page offers, read from its `data-act` attributes. */
async function offered(page: Page): Promise<string[]> {
  return page
    .locator('[data-act]')
    .evaluateAll((nodes) => nodes.map((n) => n.getAttribute('data-act') ?? ''));
}

const stack = consoleStack({
  beforeWeb: async ({ db }) => {
    const created = await createWorkspace(db.pool, 'Parish registers');
    ws = created.workspace.id;
    apiKey = created.apiKey;
  },
  web: () => ({ LOG_LEVEL: 'warn' }),
  timeout: 900_000,
});

// Registered after the stack: the people and the rows the walk opens, made through the console.
beforeAll(async () => {
  const names: Record<Role, string> = {
    owner: 'Olga Owner',
    editor: 'Eda Editor',
    reviewer: 'Rui Reviewer',
    viewer: 'Vera Viewer',
  };
  for (const role of ROLES) {
    const account = await createAccount(stack.db.pool, CLI_ACTOR, {
      email: `${role}@roles.test`,
      name: names[role],
      passwordHash: null,
    });
    await putMember(stack.db.pool, CLI_ACTOR, { workspaceId: ws, accountId: account.id, role });
    const session = await createSession(
      stack.db.pool,
      { accountId: account.id, workspaceId: ws },
      3600,
    );
    people.set(role, { id: account.id, name: names[role], cookie: `quire_session=${session}` });
  }
  // A scan with its PAGE transcript (revision 1, lines to edit, no job), and a plain image
  // whose job waits (no worker here): the pages, job and batch the walk opens.
  const transcribed = await upload(apiKey, [
    file(readFileSync(KANT.image), 'kant-0017.tif'),
    { name: 'transcript', value: readFileSync(KANT.page), filename: 'kant-0017.page.xml' },
  ]);
  const waiting = await upload(apiKey, [file(png(40, 20), 'register.png')]);
  const collection = await createCollection(stack.db.pool, CLI_ACTOR, ws, { title: 'Box 1' });
  const hook = await createSubscription(stack.db.pool, CONSOLE_SECRET_KEY, {
    workspaceId: ws,
    url: 'https://receiver.example/hook',
    secret: 's'.repeat(32),
    eventTypes: null,
  });
  // F2: the item as an archivist described it (an upload names no title of its own).
  await stack.db.pool.query('UPDATE items SET title = $1 WHERE workspace_id = $2 AND id = $3', [
    'Was ist Aufklärung?',
    ws,
    transcribed.pages[0].itemId,
  ]);
  fixture = {
    collectionId: collection.id,
    itemId: transcribed.pages[0].itemId,
    pageId: transcribed.pages[0].pageId,
    jobId: waiting.pages[0].jobId,
    batchId: waiting.batchId,
    webhookId: hook.id,
  };
}, 900_000);

describe('the console by role (R8)', () => {
  it('R8 for each role, every act the console offers (data-act) is one core/roles.ts allows it, and every allowed act of the walk is offered', async () => {
    const walk = [
      '/',
      `/collections/${fixture.collectionId}`,
      `/items/${encodeURIComponent(fixture.itemId)}`,
      `/pages/${fixture.pageId}`,
      `/jobs/${fixture.jobId}`,
      `/batches/${fixture.batchId}`,
      '/webhooks',
      `/webhooks/${fixture.webhookId}`,
      '/providers',
      '/review',
      '/audit',
    ];
    for (const role of ROLES) {
      const grant = { kind: 'role', role } as const;
      const page = await signedIn(role);
      const seen = new Set<string>();
      const paths = [
        ...walk,
        ...(permits(grant, 'batch.create') ? ['/upload'] : []),
        ...(permits(grant, 'member.invite') ? ['/members'] : []),
      ];
      for (const path of paths) {
        const response = await page.goto(path);
        expect(response?.status(), `${role} ${path}`).toBe(200);
        for (const act of await offered(page)) {
          expect(permits(grant, act as Action), `${role} is offered ${act} on ${path}`).toBe(true);
          seen.add(act);
        }
      }
      expect([...seen].sort(), role).toEqual(
        OFFERED_ON_WALK.filter((act) => permits(grant, act)).sort(),
      );
      if (!permits(grant, 'batch.create')) {
        // Reached anyway (an address typed in): the refusal, with its code and sentence.
        const refused = await page.goto('/upload');
        expect(refused?.status()).toBe(403);
        expect(await page.locator('[data-code="forbidden"]').textContent()).toContain(
          'Your role does not allow that.',
        );
      }
    }
  }, 240_000);

  it('R8 acts a role may not take, posted directly to their server actions, answer 403 with the code forbidden and a sentence as JSON, and change nothing; web.log has no stack', async () => {
    // The owner's own requests, caught on their way out (and never sent).
    const owner = await signedIn('owner');
    owner.on('dialog', (dialog) => dialog.accept());
    const caught: Array<{ headers: Record<string, string>; body: Buffer }> = [];
    await owner.route('**/*', async (route) => {
      const request = route.request();
      if (request.method() === 'POST' && request.headers()['next-action']) {
        caught.push({
          headers: request.headers(),
          body: request.postDataBuffer() ?? Buffer.alloc(0),
        });
        await route.abort();
      } else await route.continue();
    });
    const capture = async (act: Action, path: string, doIt: () => Promise<void>) => {
      await owner.goto(path);
      const before = caught.length;
      await doIt();
      await expect.poll(() => caught.length).toBe(before + 1);
      return { act, path, ...caught[caught.length - 1]! };
    };
    const posts = [
      await capture('page.publish', `/pages/${fixture.pageId}`, () =>
        owner.getByRole('button', { name: 'Publish revision 1' }).click(),
      ),
      await capture('page.edit', `/pages/${fixture.pageId}`, async () => {
        await owner.getByRole('button', { name: 'Edit', exact: true }).click();
        await owner.getByLabel('Line 1', { exact: true }).fill('Beantwortung der Frage');
        await owner.getByRole('button', { name: /Save 1 change/ }).click();
      }),
      await capture('webhook.delete', '/webhooks', () =>
        owner
          .getByRole('button', { name: 'Delete webhook to https://receiver.example/hook' })
          .click(),
      ),
      await capture('collection.create', '/', async () => {
        await owner.getByLabel('New collection').fill('Made by a reviewer');
        await owner.getByRole('button', { name: 'Create collection' }).click();
      }),
      await capture('job.cancel', `/jobs/${fixture.jobId}`, () =>
        owner.getByRole('button', { name: 'Cancel job' }).click(),
      ),
    ];
    const replay = (post: (typeof posts)[number], cookie: string) =>
      fetch(`${stack.web.url}${post.path}`, {
        method: 'POST',
        headers: {
          'content-type': post.headers['content-type']!,
          'next-action': post.headers['next-action']!,
          accept: post.headers.accept ?? 'text/x-component',
          origin: stack.web.url,
          cookie,
        },
        body: new Uint8Array(post.body),
        redirect: 'manual',
      });
    for (const post of posts) {
      for (const role of ROLES.filter((r) => !permits({ kind: 'role', role: r }, post.act))) {
        const refused = await replay(post, people.get(role)!.cookie);
        const body = await refused.text();
        expect(refused.status, `${role} ${post.act}`).toBe(403);
        expect(body, `${role} ${post.act}`).not.toMatch(/\n\s+at /);
        // Quire's refusal, not Next's error page nor a component payload: the stable code and
        // one sentence, as JSON.
        expect(refused.headers.get('content-type'), `${role} ${post.act}`).toMatch(
          /^application\/json/,
        );
        expect(JSON.parse(body), `${role} ${post.act}`).toEqual({
          error: { code: 'forbidden', message: `the ${role} role may not do ${post.act}` },
        });
      }
    }
    // The console's upload route (not an action) answers the same refusal as JSON.
    const upload = await fetch(`${stack.web.url}/console-api/batches`, {
      method: 'POST',
      headers: {
        'content-type': 'multipart/form-data; boundary=----quire-test-boundary-7c1d',
        origin: stack.web.url,
        cookie: people.get('reviewer')!.cookie,
      },
      body: new Uint8Array(multipartBody([file(png(40, 20), 'by-a-reviewer.png')])),
    });
    expect(upload.status).toBe(403);
    expect((await upload.json()).error).toMatchObject({
      code: 'forbidden',
      message: 'the reviewer role may not do batch.create',
    });
    // Nothing changed.
    const { rows } = await stack.db.pool.query(
      `SELECT (SELECT published_revision FROM pages WHERE id = $1) AS published,
              (SELECT revision FROM pages WHERE id = $1) AS revision,
              (SELECT count(*)::int FROM webhook_subscriptions WHERE id = $2) AS hooks,
              (SELECT count(*)::int FROM collections WHERE workspace_id = $3) AS collections,
              (SELECT status FROM transcription_jobs WHERE id = $4) AS job`,
      [fixture.pageId, fixture.webhookId, ws, fixture.jobId],
    );
    expect(rows[0]).toMatchObject({ published: null, revision: 1, hooks: 1, collections: 1 });
    expect(rows[0].job).not.toBe('canceled');
    expect(stack.web.output()).not.toMatch(/\n\s+at /);
  }, 240_000);
});

describe('people by name (R7, R10)', () => {
  it('R7 R10 the audit page and the revision history name the person (the account id beneath), the log filters by person, and the ALTO export names the editor', async () => {
    const owner = people.get('owner')!;
    const page = await signedIn('owner');
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    page.on('console', (m) => {
      if (m.type() === 'error') errors.push(m.text());
    });
    await page.goto(`/pages/${fixture.pageId}`);
    // R7: the item by its title and the page by its place, not by ids.
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe(
      'Page 1 of 1 · Was ist Aufklärung?',
    );
    const crumbs = await page.getByRole('navigation', { name: 'Breadcrumb' }).textContent();
    expect(crumbs).toContain('Was ist Aufklärung?');
    expect(crumbs).not.toContain(fixture.itemId);
    await page.getByRole('button', { name: 'Edit', exact: true }).click();
    await page.getByLabel('Line 1', { exact: true }).fill('Beantwortung der Frage:');
    await page.getByRole('button', { name: /Save 1 change/ }).click();
    await expect
      .poll(() => page.getByRole('status').filter({ hasText: 'Saved as revision' }).count())
      .toBe(1);
    await page.reload();
    const by = page.locator('td[data-label="By"] .actor').first();
    expect(await by.textContent()).toBe(owner.name);
    expect(await by.getAttribute('title')).toBe(`account ${owner.id}`);

    const alto = await page.request.get(`/console-api/pages/${fixture.pageId}/export?format=alto`);
    const text = await alto.text();
    expect(text).toContain(`<processingAgency>${owner.name}</processingAgency>`);
    expect(text).toContain(`<processingStepSettings>account=${owner.id}</processingStepSettings>`);

    await page.goto('/audit');
    const edit = page.locator(`tr[data-action="page.edit"][data-target="pages/${fixture.pageId}"]`);
    expect(await edit.locator('.actor').textContent()).toBe(owner.name);
    expect(await edit.locator('.actor').getAttribute('data-actor')).toBe(`account:${owner.id}`);
    expect(await edit.locator('td[data-label="After"]').textContent()).toContain('"edited":1');
    // The uploads are the key's.
    expect(await page.locator('tr[data-action="batch.create"] .actor').first().textContent()).toBe(
      'initial',
    );
    expect(await page.locator('body').textContent()).not.toMatch(/API key null|console:account/);
    await screenshots(page, 'audit');
    await page.getByLabel('Person').selectOption(`account:${owner.id}`);
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.waitForURL((url) => url.searchParams.get('person') === `account:${owner.id}`);
    const actors = await page.locator('tr[data-action] .actor').allTextContents();
    expect(actors.length).toBeGreaterThan(0);
    expect(new Set(actors)).toEqual(new Set([owner.name]));
    expect(errors).toEqual([]);
  }, 120_000);
});
