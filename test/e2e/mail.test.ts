import type { BrowserContext, Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { CLI_ACTOR } from '../../core/actor';
import { hashPassword } from '../../core/passwords';
import { createAccount, putMember } from '../../db/accounts';
import { createWorkspace } from '../../db/workspaces';
import type { MailSink } from '../../scripts/lib/mailSink';
import { screenshots, seriousViolations } from '../support/browser';
import { consoleStack, signInWithPassword } from '../support/consoleStack';
import { startTestMailSink } from '../support/mailSink';

/**
 * R9, X2, X6 in Debian's Chromium against a real `next start` on PostgreSQL that sends its
 * mail through a real SMTP sink (Mailpit), read through the sink's HTTP API as the mailbox:
 * an owner invites an address and the link reaches only that mailbox, where the person
 * chooses their password; a person asks for a reset link and follows it; a signed-in person
 * changes their password and is sent a notice. Pages are checked with axe and for errors.
 */
let sink: MailSink;
let ws: number;

const stack = consoleStack({
  beforeWeb: async ({ db }) => {
    ws = (await createWorkspace(db.pool, 'Parish registers')).workspace.id;
    sink = await startTestMailSink();
  },
  web: () => ({
    QUIRE_SMTP_URL: sink.smtpUrl,
    QUIRE_DEV_MAIL_URL: sink.httpUrl,
    LOG_LEVEL: 'warn',
  }),
  beforeClose: async () => {
    await sink?.stop();
  },
  timeout: 900_000,
});
const PASSWORD = 'correct horse battery staple';

async function account(email: string, name: string, role?: 'owner' | 'editor') {
  const made = await createAccount(stack.db.pool, CLI_ACTOR, {
    email,
    name,
    passwordHash: await hashPassword(PASSWORD),
  });
  if (role)
    await putMember(stack.db.pool, CLI_ACTOR, { workspaceId: ws, accountId: made.id, role });
  return made;
}

/** A page that fails the test on an uncaught error or a refused script or style (CSP). */
async function watchedPage(context: BrowserContext): Promise<{ page: Page; errors: string[] }> {
  const page = await context.newPage();
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(`page: ${String(e)}`));
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(`console: ${m.text()}`);
  });
  return { page, errors };
}

const signIn = (page: Page, email: string, password: string, landing: string) =>
  signInWithPassword(page, email, password, landing, 15_000);

/** The path of the link a message carries to this console. */
const linkPath = (text: string, kind: 'invite' | 'reset') => {
  const found = new RegExp(`${stack.web.url}/${kind}/(q[ir]_[A-Za-z0-9_-]{43})`).exec(text);
  if (!found) throw new Error(`no ${kind} link in the message`);
  return `/${kind}/${found[1]}`;
};

describe('mail in the console (R9)', () => {
  it('R9 X2 an owner invites an address: the link goes only to its mailbox, where the person chooses a password, joins with the invited role alone, and signs in with it later', async () => {
    const owner = await account('owen@mail.test', 'Owen Owner', 'owner');
    const { page: ownerPage, errors } = await watchedPage(await stack.newContext());
    await signIn(ownerPage, owner.email, PASSWORD, '/');
    await ownerPage.getByRole('link', { name: 'Members' }).click();
    await ownerPage.waitForURL('**/members');
    expect(await ownerPage.locator('[data-dev-mail] a').getAttribute('href')).toBe(sink.httpUrl);
    await ownerPage.getByLabel('Email').fill('invited@mail.test');
    await ownerPage.getByLabel('Role', { exact: true }).selectOption('reviewer');
    await ownerPage.getByRole('button', { name: 'Invite', exact: true }).click();
    const status = ownerPage.locator('form[data-act="member.invite"] [role="status"]');
    await expect.poll(() => status.textContent(), { timeout: 15_000 }).toContain('Invitation sent');
    // X2: the owner's page carries no link; no account exists until the person follows it.
    expect(await ownerPage.content()).not.toMatch(/\/invite\/qi_/);
    const none = await stack.db.pool.query('SELECT 1 FROM accounts WHERE email = $1', [
      'invited@mail.test',
    ]);
    expect(none.rows).toEqual([]);
    await screenshots(ownerPage, 'mail-invite-sent');

    const message = await sink.waitForMessage('invited@mail.test', /invited/);
    const path = linkPath(message.text, 'invite');
    const { page: invited, errors: invitedErrors } = await watchedPage(await stack.newContext());
    await invited.goto(path);
    expect(await seriousViolations(invited)).toEqual([]);
    await invited.getByLabel('Your name').fill('Ivy Invited');
    await invited.getByLabel(/Choose a password/).fill('the password Ivy chose herself');
    await invited.getByRole('button', { name: 'Join' }).click();
    await invited.waitForURL((url) => url.pathname === '/', { timeout: 15_000 });
    expect(await invited.locator('.signout').textContent()).toContain('(reviewer)');
    expect(await invited.getByRole('link', { name: 'Members' }).count()).toBe(0);
    const { rows } = await stack.db.pool.query(
      `SELECT a.operator, m.workspace_id, m.role FROM accounts a
         JOIN workspace_members m ON m.account_id = a.id WHERE a.email = $1`,
      ['invited@mail.test'],
    );
    expect(rows).toEqual([{ operator: false, workspace_id: ws, role: 'reviewer' }]);

    // The link works once; the password the person chose signs them in.
    const { page: reused } = await watchedPage(await stack.newContext());
    await reused.goto(path);
    expect(await reused.locator('main').textContent()).toContain('not valid');
    const { page: later } = await watchedPage(await stack.newContext());
    await signIn(later, 'invited@mail.test', 'the password Ivy chose herself', '/');
    expect(errors).toEqual([]);
    expect(invitedErrors).toEqual([]);
  }, 180_000);

  it('X6 inviting an address that has an account answers on the page exactly as inviting one that has none', async () => {
    const owner = await account('oda@mail.test', 'Oda Owner', 'owner');
    await account('known@mail.test', 'Known Person');
    const { page } = await watchedPage(await stack.newContext());
    await signIn(page, owner.email, PASSWORD, '/');
    const answerFor = async (email: string) => {
      await page.goto('/members');
      await page.getByLabel('Email').fill(email);
      await page.getByRole('button', { name: 'Invite', exact: true }).click();
      const status = page.locator('form[data-act="member.invite"] [role="status"]');
      await expect.poll(() => status.textContent(), { timeout: 15_000 }).toContain(email);
      const form = page.locator('form[data-act="member.invite"]');
      // The form as a person reads it (React's own hidden fields aside): fields, words, roles.
      const seen = await form.evaluate((f) =>
        [...f.querySelectorAll('label, input:not([type=hidden]), select, button, [role]')].map(
          (e) => `${e.tagName}:${e.getAttribute('role') ?? ''}:${e.textContent}`,
        ),
      );
      return seen.map((line) => line.replaceAll(email, 'EMAIL'));
    };
    const known = await answerFor('known@mail.test');
    expect(known).toEqual(await answerFor('unknown@mail.test'));
    expect(known.join(' ')).not.toContain('alert');
    expect(known.join(' ')).toContain('Invitation sent to EMAIL');
  }, 120_000);

  it('R9 X6 "Forgot your password?" sends a reset link to the address; the link opens a page that sets the new password, and the person signs in with it', async () => {
    const person = await account('rita@mail.test', 'Rita Reader', 'editor');
    const { page, errors } = await watchedPage(await stack.newContext());
    await page.goto('/signin');
    expect(await page.locator('[data-dev-mail] a').getAttribute('href')).toBe(sink.httpUrl);
    await page.getByRole('link', { name: 'Forgot your password?' }).click();
    await page.waitForURL('**/signin/forgot');
    expect(await seriousViolations(page)).toEqual([]);
    const answerFor = async (email: string) => {
      await page.goto('/signin/forgot');
      await page.getByLabel('Email').fill(email);
      await page.getByRole('button', { name: 'Send a reset link' }).click();
      const sent = page.locator('[data-sent]');
      await sent.waitFor({ timeout: 15_000 });
      return sent.textContent();
    };
    // X6: the same answer for an address without an account, and nothing is sent to it.
    expect(await answerFor(person.email)).toBe(await answerFor('nobody@mail.test'));
    await screenshots(page, 'mail-forgot-sent');

    const message = await sink.waitForMessage(person.email, /Reset your Quire password/);
    await page.goto(linkPath(message.text, 'reset'));
    expect(await seriousViolations(page)).toEqual([]);
    await page.getByLabel('New password (12 characters or more)').fill('a fresh password for Rita');
    await page.getByLabel('The new password again').fill('a fresh password for Rita');
    await page.getByRole('button', { name: 'Set the password' }).click();
    await page.waitForURL((url) => url.pathname === '/signin', { timeout: 15_000 });
    expect(await page.locator('[data-changed]').textContent()).toContain('password was changed');
    await signIn(page, person.email, 'a fresh password for Rita', '/');
    await sink.waitForMessage(person.email, /password was changed/);
    expect(await sink.messagesTo('nobody@mail.test')).toEqual([]);
    expect(errors).toEqual([]);
  }, 120_000);

  it('R9 a signed-in person changes their own password on the Password page with the current one; a notice arrives, and the old password no longer signs in', async () => {
    const person = await account('cole@mail.test', 'Cole Changer', 'editor');
    const { page, errors } = await watchedPage(await stack.newContext());
    await signIn(page, person.email, PASSWORD, '/');
    await page.getByRole('link', { name: 'Password', exact: true }).click();
    await page.waitForURL('**/account/password');
    expect(await seriousViolations(page)).toEqual([]);
    const fill = async (current: string, next: string) => {
      await page.getByLabel('Current password').fill(current);
      await page.getByLabel('New password (12 characters or more)').fill(next);
      await page.getByLabel('The new password again').fill(next);
      await page.getByRole('button', { name: 'Change the password' }).click();
    };
    await fill('not the current password', 'a new password for Cole');
    await expect
      .poll(() => page.getByRole('alert').filter({ hasText: /\w/ }).textContent(), {
        timeout: 15_000,
      })
      .toContain('current password is wrong');
    await fill(PASSWORD, 'a new password for Cole');
    await expect
      .poll(() => page.locator('[data-done]').textContent(), { timeout: 15_000 })
      .toContain('Password changed');
    await screenshots(page, 'mail-password-changed');
    const notice = await sink.waitForMessage(person.email, /password was changed/);
    expect(notice.text).not.toContain('a new password for Cole');

    // This session stays; elsewhere, the old password is refused and the new one works.
    await page.goto('/jobs');
    expect(new URL(page.url()).pathname).toBe('/jobs');
    const { page: other } = await watchedPage(await stack.newContext());
    await other.goto('/signin');
    await other.getByLabel('Email').fill(person.email);
    await other.getByLabel('Password').fill(PASSWORD);
    await other.getByRole('button', { name: 'Sign in', exact: true }).click();
    await expect
      .poll(() => other.getByRole('alert').filter({ hasText: /\w/ }).textContent())
      .toContain('not valid');
    await signIn(other, person.email, 'a new password for Cole', '/');
    expect(errors).toEqual([]);
  }, 120_000);
});
