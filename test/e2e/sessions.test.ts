import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { CLI_ACTOR } from '../../core/actor';
import { hashPassword } from '../../core/passwords';
import { createAccount, putMember, removeMember, setAccountDisabled } from '../../db/accounts';
import { createWorkspace } from '../../db/workspaces';
import { isolatedContexts, launchBrowser } from '../support/browser';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { temporalAddress } from '../support/quire';
import { buildWeb, removeWebBuild, startWeb, type WebProcess } from '../support/webServer';

/**
 * R1-R3 across two real `next start` replicas on one PostgreSQL, in Debian's Chromium: a
 * person signs in with email and password on one replica, the same cookie works on the other
 * (the session is a row both read), and signing out, removing the member or disabling the
 * account on one ends it on the other at once. Failed sign-ins are counted in PostgreSQL, so a
 * replica refuses what the other has seen too often. (Invitations, which go by email: mail.test.ts.)
 */
let db: TestDatabase;
let distDir: string;
let web1: WebProcess;
let web2: WebProcess;
let browser: Browser;
let ws: number;
const contexts = isolatedContexts(() => ({ browser, baseURL: web1.url }));
const PASSWORD = 'correct horse battery staple';
let counter = 0;

async function person(role: 'owner' | 'editor' | 'viewer') {
  counter += 1;
  const email = `${role}-${counter}@sessions.test`;
  const account = await createAccount(db.pool, CLI_ACTOR, {
    email,
    name: `${role} ${counter}`,
    passwordHash: await hashPassword(PASSWORD),
  });
  await putMember(db.pool, CLI_ACTOR, { workspaceId: ws, accountId: account.id, role });
  return { email, accountId: account.id };
}

async function signIn(context: BrowserContext, base: string, email: string, password = PASSWORD) {
  const page = await context.newPage();
  await page.goto(`${base}/signin`);
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  return page;
}

/** Where a replica sends this context for /jobs: the jobs page when signed in, else sign-in. */
async function landingOn(page: Page, base: string): Promise<string> {
  await page.goto(`${base}/jobs`);
  return new URL(page.url()).pathname;
}

beforeAll(async () => {
  db = await createTestDatabase();
  ws = (await createWorkspace(db.pool, 'Sessions')).workspace.id;
  distDir = await buildWeb();
  const env = {
    DATABASE_URL: db.url,
    TEMPORAL_ADDRESS: temporalAddress(),
    QUIRE_SECRET_KEY: 'quire-test-secret-key-0123456789-abcdefghij',
    QUIRE_SIGNIN_MAX_FAILURES_PER_ACCOUNT: '3',
    // X4: past the limit an address waits (no lock); long enough to span the test's tries.
    QUIRE_SIGNIN_DELAY_MS: '120000',
    LOG_LEVEL: 'warn',
  };
  [web1, web2] = await Promise.all([startWeb(distDir, env), startWeb(distDir, env)]);
  browser = await launchBrowser();
}, 900_000);

afterEach(async () => {
  await contexts.closeAll();
});

afterAll(async () => {
  await browser?.close();
  await web1?.stop();
  await web2?.stop();
  if (distDir) removeWebBuild(distDir);
  await db?.drop();
});

describe('sessions across replicas (R2, R3)', () => {
  it('R3 sign-out on one web replica ends the session on the other', async () => {
    const { email } = await person('editor');
    const context = await contexts.fresh();
    const page = await signIn(context, web1.url, email);
    await page.waitForURL((url) => url.pathname === '/');
    // The cookie is the host's (both replicas are 127.0.0.1), so the other replica sees it.
    expect(await landingOn(page, web2.url)).toBe('/jobs');
    const cookie = (await context.cookies()).find((c) => c.name === 'quire_session')!;
    expect(cookie.value).toMatch(/^qs_/);
    expect(cookie.httpOnly).toBe(true);

    await page.goto(`${web1.url}/jobs`);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL('**/signin');
    // The old cookie, replayed by hand to the other replica, opens nothing any more.
    const replayed = await fetch(`${web2.url}/jobs`, {
      headers: { cookie: `quire_session=${cookie.value}` },
      redirect: 'manual',
    });
    expect(replayed.status).toBeGreaterThanOrEqual(300);
    expect(replayed.headers.get('location') ?? '').toContain('/signin');
    const live = await fetch(`${web2.url}/console-api/live?topics=jobs`, {
      headers: { cookie: `quire_session=${cookie.value}` },
    });
    expect(live.status).toBe(401);
  }, 120_000);

  it('R3 an owner removing a member, and an operator disabling an account, end their sessions on every replica at once', async () => {
    const removed = await person('editor');
    const disabled = await person('viewer');
    const a = await signIn(await contexts.fresh(), web1.url, removed.email);
    await a.waitForURL((url) => url.pathname === '/');
    const b = await signIn(await contexts.fresh(), web2.url, disabled.email);
    await b.waitForURL((url) => url.pathname === '/');
    expect(await landingOn(a, web2.url)).toBe('/jobs');
    expect(await landingOn(b, web1.url)).toBe('/jobs');

    await removeMember(db.pool, CLI_ACTOR, { workspaceId: ws, accountId: removed.accountId });
    await setAccountDisabled(db.pool, CLI_ACTOR, disabled.accountId, true);
    expect(await landingOn(a, web2.url)).toBe('/signin');
    expect(await landingOn(a, web1.url)).toBe('/signin');
    expect(await landingOn(b, web1.url)).toBe('/signin');
    expect(await landingOn(b, web2.url)).toBe('/signin');
    // A disabled account cannot sign in again either.
    const again = await signIn(await contexts.fresh(), web1.url, disabled.email);
    await expect.poll(() => again.getByRole('alert').first().textContent()).toContain('not valid');
  }, 120_000);

  it('R2 X4 failed sign-ins are counted in PostgreSQL: after too many on one replica, the other makes the same address wait, even with the right password', async () => {
    const { email } = await person('editor');
    const context = await contexts.fresh();
    for (let i = 0; i < 3; i += 1) {
      const page = await signIn(context, web1.url, email, 'a wrong password!!');
      await expect.poll(() => page.getByRole('alert').first().textContent()).toContain('not valid');
      await page.close();
    }
    const page = await signIn(context, web2.url, email);
    await expect.poll(() => page.getByRole('alert').first().textContent()).toContain('Too many');
    expect(new URL(page.url()).pathname).toBe('/signin');
  }, 120_000);
});
