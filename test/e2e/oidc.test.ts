import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, BrowserContext } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { CLI_ACTOR } from '../../core/actor';
import { createAccount } from '../../db/accounts';
import { createInvitation } from '../../db/invitations';
import { createWorkspace } from '../../db/workspaces';
import { type IdentityProvider, startIdentityProvider } from '../../scripts/lib/identityProvider';
import { freePort } from '../../scripts/lib/temporal';
import { isolatedContexts, launchBrowser } from '../support/browser';
import { adminQuery, createTestDatabase, databaseUrl, type TestDatabase } from '../support/db';
import { temporalAddress } from '../support/quire';
import { buildWeb, removeWebBuild, startWeb, type WebProcess } from '../support/webServer';

/**
 * R2: single sign-on against a real OpenID Connect provider, in Debian's Chromium: Ory Hydra
 * v2.3.0 (built from the Go module proxy) with Quire's development login-and-consent app.
 * The browser leaves the console for the provider's login page, signs in there, comes back
 * through the authorization-code-with-PKCE callback and lands in the console with the role
 * the group mapping gives; an operator group lands in the operator view. X2: an account
 * someone else made for a person's email (an owner accepting their own invitation to it) is
 * not taken over by that person's first sign-in, whatever `email_verified` says; the person
 * signed in to their own account links it.
 */
let db: TestDatabase;
let hydraDb: string;
let idp: IdentityProvider;
let distDir: string;
let web: WebProcess;
let browser: Browser;
let ws: number;
let owner: { id: number; name: string };
const contexts = isolatedContexts(() => ({ browser, baseURL: web.url }));
/** One victim per `email_verified` the provider gives (the boolean and the string apart). */
const victimEmail = (verified: boolean | string) =>
  `victim-${typeof verified === 'string' ? `text-${verified}` : verified}@idp.test`;
const PEOPLE = [
  {
    email: 'reviewer@idp.test',
    name: 'Ada Reviewer',
    password: 'reviewer-password-1',
    groups: ['transcribers', 'reviewers'],
  },
  { email: 'ops@idp.test', name: 'Olu Operator', password: 'operator-password-1', groups: ['ops'] },
  // X2: operators at the provider whose email a Quire owner claims first.
  ...(['omitted', 'false', false, true] as const).map((emailVerified) => ({
    email: victimEmail(emailVerified),
    name: 'Vic Victim',
    password: 'victim-password-1',
    groups: ['ops'],
    emailVerified,
  })),
  {
    email: 'linker@idp.test',
    name: 'Lin Linker',
    password: 'linker-password-1',
    groups: ['reviewers'],
  },
];
const QUIRE_PASSWORD = 'a password set in Quire';

beforeAll(async () => {
  db = await createTestDatabase();
  ws = (await createWorkspace(db.pool, 'Single sign-on')).workspace.id;
  hydraDb = `${db.name}_hydra`;
  await adminQuery(`CREATE DATABASE ${hydraDb}`);
  const [webPort, publicPort] = [await freePort(), await freePort()];
  const dsn = new URL(databaseUrl(hydraDb));
  dsn.searchParams.set('sslmode', 'disable');
  idp = await startIdentityProvider({
    dsn: dsn.toString(),
    publicPort,
    people: PEOPLE,
    logFile: join(mkdtempSync(join(tmpdir(), 'quire-hydra-')), 'hydra.log'),
  });
  const publicUrl = `http://127.0.0.1:${webPort}`;
  const client = await idp.registerClient({
    redirectUris: [`${publicUrl}/signin/oidc/callback`],
  });
  distDir = await buildWeb();
  web = await startWeb(
    distDir,
    {
      DATABASE_URL: db.url,
      TEMPORAL_ADDRESS: temporalAddress(),
      QUIRE_SECRET_KEY: 'quire-test-secret-key-0123456789-abcdefghij',
      QUIRE_PUBLIC_URL: publicUrl,
      QUIRE_OIDC_ISSUER: idp.issuer,
      QUIRE_OIDC_CLIENT_ID: client.clientId,
      QUIRE_OIDC_CLIENT_SECRET: client.clientSecret,
      QUIRE_OIDC_NAME: 'the archive login',
      QUIRE_OIDC_ROLE_MAPPING: JSON.stringify({
        claim: 'groups',
        workspaces: { transcribers: { [ws]: 'viewer' }, reviewers: { [ws]: 'reviewer' } },
        operators: ['ops'],
      }),
      LOG_LEVEL: 'warn',
    },
    webPort,
  );
  browser = await launchBrowser();
  owner = await createAccount(db.pool, CLI_ACTOR, {
    email: 'owner@corp.test',
    name: 'Oona Owner',
    passwordHash: null,
  });
}, 900_000);

afterEach(async () => {
  await contexts.closeAll();
});

afterAll(async () => {
  await browser?.close();
  await web?.stop();
  if (distDir) removeWebBuild(distDir);
  await idp?.stop();
  await db?.drop();
  if (hydraDb) await adminQuery(`DROP DATABASE IF EXISTS ${hydraDb} WITH (FORCE)`);
});

async function signInAtProvider(context: BrowserContext, email: string, password: string) {
  const page = await context.newPage();
  await page.goto('/signin');
  await page.getByRole('link', { name: 'Sign in with the archive login' }).click();
  // The provider's own login page (the development login app behind Hydra).
  await page.waitForURL(`${idp.loginAppUrl}/login?**`);
  await page.getByLabel('Username').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Log in' }).click();
  return page;
}

describe('single sign-on (R2)', () => {
  it("R2 a person signs in through the OIDC provider's login page and lands in the console with the role their groups map to", async () => {
    const page = await signInAtProvider(
      await contexts.fresh(),
      PEOPLE[0]!.email,
      PEOPLE[0]!.password,
    );
    await page.waitForURL((url) => url.href === `${web.url}/`, { timeout: 30_000 });
    // Two groups map to this workspace: the stronger role wins.
    expect(await page.locator('.signout').textContent()).toContain(`Workspace ${ws} (reviewer)`);
    expect(await page.locator('.signout').textContent()).toContain('Ada Reviewer');
    const { rows } = await db.pool.query(
      `SELECT a.email, a.oidc_issuer, a.oidc_subject, a.password_hash, m.role
         FROM accounts a JOIN workspace_members m ON m.account_id = a.id WHERE m.workspace_id = $1`,
      [ws],
    );
    expect(rows).toEqual([
      {
        email: 'reviewer@idp.test',
        oidc_issuer: expect.stringContaining(idp.issuer),
        oidc_subject: 'reviewer@idp.test',
        password_hash: null,
        role: 'reviewer',
      },
    ]);
    // No Temporal UI for a workspace session (R4).
    expect(await page.getByRole('link', { name: /Temporal UI/ }).count()).toBe(0);
  }, 120_000);

  it('R2 R4 an operator group lands in the operator view, which alone links to the Temporal UI', async () => {
    const page = await signInAtProvider(
      await contexts.fresh(),
      PEOPLE[1]!.email,
      PEOPLE[1]!.password,
    );
    await page.waitForURL(`${web.url}/operator`, { timeout: 30_000 });
    expect(await page.getByRole('link', { name: /Temporal UI/ }).count()).toBe(1);
  }, 120_000);

  it('R2 a wrong password at the provider starts no session', async () => {
    const context = await contexts.fresh();
    const page = await signInAtProvider(context, PEOPLE[0]!.email, 'not the password');
    await expect.poll(() => page.getByRole('alert').textContent()).toContain('Wrong');
    expect((await context.cookies()).some((c) => c.name === 'quire_session')).toBe(false);
  }, 60_000);
});

/** X2: an owner invites `email` and opens the link themself: a password account for it, in Quire. */
async function acceptInvitationAs(context: BrowserContext, email: string) {
  const { token } = await createInvitation(
    db.pool,
    { kind: 'account', id: owner.id, name: owner.name },
    { workspaceId: ws, email, role: 'viewer', ttlSeconds: 3600 },
  );
  const page = await context.newPage();
  await page.goto(`/invite/${token}`);
  await page.getByLabel('Your name').fill('Someone');
  await page.getByLabel(/password/i).fill(QUIRE_PASSWORD);
  await page.getByRole('button', { name: 'Join' }).click();
  await page.waitForURL((url) => url.href === `${web.url}/`, { timeout: 30_000 });
  return page;
}

const accountRow = async (email: string) =>
  (
    await db.pool.query(
      `SELECT a.oidc_subject, a.operator, m.role FROM accounts a
         LEFT JOIN workspace_members m ON m.account_id = a.id AND m.workspace_id = $2
        WHERE a.email = $1`,
      [email, ws],
    )
  ).rows;

const auditCount = async (action: string) =>
  Number(
    (await db.pool.query('SELECT count(*) FROM audit_log WHERE action = $1', [action])).rows[0]
      .count,
  );

describe('single sign-on does not take over an account (X2)', () => {
  it.each([
    ['omitted', 'oidc_email_unverified'],
    ['false', 'oidc_email_unverified'],
    [false, 'oidc_email_unverified'],
    [true, 'oidc_operator_link'],
  ] as const)(
    "X2 an owner pre-claims an operator's email; their first sign-in with email_verified %j links nothing and says why (%s)",
    async (verified, code) => {
      const victim = PEOPLE.find((p) => p.email === victimEmail(verified))!;
      await acceptInvitationAs(await contexts.fresh(), victim.email);
      const links = await auditCount('account.oidc_link');
      const context = await contexts.fresh();
      const page = await signInAtProvider(context, victim.email, victim.password);
      await page.waitForURL(`${web.url}/signin?error=${code}`, { timeout: 30_000 });
      await expect
        .poll(() => page.locator('[role="alert"][data-code]').getAttribute('data-code'))
        .toBe(code);
      expect((await context.cookies()).some((c) => c.name === 'quire_session')).toBe(false);
      expect(await accountRow(victim.email)).toEqual([
        { oidc_subject: null, operator: false, role: 'viewer' },
      ]);
      expect(await auditCount('account.oidc_link')).toBe(links);
      // The pre-claimed password opens only what the owner gave it, never the operator view.
      const attacker = await (await contexts.fresh()).newPage();
      await attacker.goto('/signin');
      await attacker.getByLabel('Email').fill(victim.email);
      await attacker.getByLabel('Password').fill(QUIRE_PASSWORD);
      await attacker.getByRole('button', { name: 'Sign in', exact: true }).click();
      await attacker.waitForURL((url) => url.href === `${web.url}/`, { timeout: 30_000 });
      expect(await attacker.locator('.signout').textContent()).toContain(
        `Workspace ${ws} (viewer)`,
      );
    },
    120_000,
  );

  it('X2 a person signed in to their own account links it by starting single sign-on: audited, no mapped role copied, and the provider then signs them in to it', async () => {
    const linker = PEOPLE.find((p) => p.email === 'linker@idp.test')!;
    const context = await contexts.fresh();
    const own = await acceptInvitationAs(context, linker.email);
    await own.close();
    const page = await signInAtProvider(context, linker.email, linker.password);
    await page.waitForURL((url) => url.href === `${web.url}/`, { timeout: 30_000 });
    // Their invitation made them a viewer; the provider's reviewer group is not copied on.
    expect(await accountRow(linker.email)).toEqual([
      { oidc_subject: linker.email, operator: false, role: 'viewer' },
    ]);
    const { rows } = await db.pool.query(
      `SELECT l.actor_account_id, l.after FROM audit_log l JOIN accounts a ON l.target = 'accounts/' || a.id
        WHERE l.action = 'account.oidc_link' AND a.email = $1`,
      [linker.email],
    );
    expect(rows).toEqual([
      {
        actor_account_id: expect.any(Number),
        after: { issuer: expect.stringContaining(idp.issuer), proof: 'signed_in' },
      },
    ]);
    const again = await signInAtProvider(await contexts.fresh(), linker.email, linker.password);
    await again.waitForURL((url) => url.href === `${web.url}/`, { timeout: 30_000 });
    expect(await again.locator('.signout').textContent()).toContain(`Workspace ${ws} (viewer)`);
  }, 120_000);
});
