import type { BrowserContext, Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { CLI_ACTOR } from '../../core/actor';
import { hashPassword } from '../../core/passwords';
import { createAccount, putMember } from '../../db/accounts';
import { createInvitation } from '../../db/invitations';
import { createWorkspace } from '../../db/workspaces';
import type { MailSink } from '../../scripts/lib/mailSink';
import { seriousViolations } from '../support/browser';
import { consoleStack, signInWithPassword } from '../support/consoleStack';
import { startTestMailSink } from '../support/mailSink';

/**
 * R1, R3 in Debian's Chromium against a real `next start` on PostgreSQL: an operator disables
 * an account from the operator's accounts page and that account's open session is signed out
 * at its next request; an owner revokes a pending invitation from the members page and its
 * link then shows the refusal. Each page is checked with axe. X6: an invitation link and a
 * failed sign-in say nothing of whether the address has an account.
 */
let sink: MailSink;
let ws: number;

const stack = consoleStack({
  beforeWeb: async ({ db }) => {
    ws = (await createWorkspace(db.pool, 'Parish registers')).workspace.id;
    sink = await startTestMailSink();
  },
  web: () => ({ QUIRE_SMTP_URL: sink.smtpUrl, LOG_LEVEL: 'warn' }),
  beforeClose: async () => {
    await sink?.stop();
  },
  timeout: 900_000,
});
const PASSWORD = 'correct horse battery staple';

async function account(email: string, name: string, role?: 'owner' | 'editor', operator = false) {
  const made = await createAccount(stack.db.pool, CLI_ACTOR, {
    email,
    name,
    passwordHash: await hashPassword(PASSWORD),
    operator,
  });
  if (role)
    await putMember(stack.db.pool, CLI_ACTOR, { workspaceId: ws, accountId: made.id, role });
  return made;
}

async function signIn(context: BrowserContext, email: string, landing: string): Promise<Page> {
  const page = await context.newPage();
  await signInWithPassword(page, email, PASSWORD, landing);
  return page;
}

const auditOf = async (action: string, target: string) =>
  (
    await stack.db.pool.query(
      'SELECT actor_kind, actor_account_id FROM audit_log WHERE action = $1 AND target = $2',
      [action, target],
    )
  ).rows;

describe('people in the console (R1, R3)', () => {
  it('R3 an operator disables an account on the accounts page; its open session is signed out at its next request; enabling lets it in again', async () => {
    const operator = await account('olga@people.test', 'Olga Operator', undefined, true);
    const editor = await account('ed@people.test', 'Ed Editor', 'editor');
    const edPage = await signIn(await stack.newContext(), editor.email, '/');
    await edPage.goto('/jobs');
    expect(new URL(edPage.url()).pathname).toBe('/jobs');

    const opPage = await signIn(await stack.newContext(), operator.email, '/operator');
    await opPage.getByRole('link', { name: 'Accounts', exact: true }).first().click();
    await opPage.waitForURL('**/operator/accounts');
    // The operator's own row has no Disable: an operator cannot disable themself.
    const own = opPage.locator(`tr[data-account="${operator.email}"]`);
    expect(await own.textContent()).toContain('(you)');
    expect(await own.getByRole('button').count()).toBe(0);
    await opPage.getByLabel('Email or name').fill('ed@');
    await opPage.getByRole('button', { name: 'Search' }).click();
    await opPage.waitForURL((url) => url.searchParams.get('q') === 'ed@');
    expect(await opPage.locator('tr[data-account]').count()).toBe(1);
    const row = opPage.locator(`tr[data-account="${editor.email}"]`);
    expect(await row.getAttribute('data-state')).toBe('active');
    expect(await row.textContent()).toContain(`${ws} · Parish registers (editor)`);
    expect(await seriousViolations(opPage)).toEqual([]);

    await row.getByRole('button', { name: `Disable ${editor.email}` }).click();
    await expect.poll(() => row.getAttribute('data-state'), { timeout: 15_000 }).toBe('disabled');
    await expect.poll(() => row.getByRole('status').textContent()).toContain('1 session ended');
    expect(await seriousViolations(opPage)).toEqual([]);
    expect(await auditOf('account.disable', `accounts/${editor.id}`)).toEqual([
      { actor_kind: 'account', actor_account_id: operator.id },
    ]);

    // The editor's page is still open; its next request finds the session gone.
    await edPage.reload();
    expect(new URL(edPage.url()).pathname).toBe('/signin');
    await edPage.goto('/jobs');
    expect(new URL(edPage.url()).pathname).toBe('/signin');

    await row.getByRole('button', { name: `Enable ${editor.email}` }).click();
    await expect.poll(() => row.getAttribute('data-state'), { timeout: 15_000 }).toBe('active');
    const again = await signIn(await stack.newContext(), editor.email, '/');
    expect(new URL(again.url()).pathname).toBe('/');
  }, 120_000);

  it('R1 an owner revokes a pending invitation on the members page; its link then shows the refusal and joins no one', async () => {
    const owner = await account('owen@people.test', 'Owen Owner', 'owner');
    const ownerPage = await signIn(await stack.newContext(), owner.email, '/');
    await ownerPage.getByRole('link', { name: 'Members' }).click();
    await ownerPage.waitForURL('**/members');
    await ownerPage.getByLabel('Email').fill('late@people.test');
    await ownerPage.getByLabel('Role', { exact: true }).selectOption('viewer');
    await ownerPage.getByRole('button', { name: 'Invite' }).click();
    // R9: the link went to the invited address only; the test reads it there.
    const message = await sink.waitForMessage('late@people.test', /invited/);
    const path = /\/invite\/qi_[A-Za-z0-9_-]{43}/.exec(message.text)![0];

    const pending = ownerPage.locator('li[data-invitation="late@people.test"]');
    await expect.poll(() => pending.textContent(), { timeout: 15_000 }).toContain('as viewer');
    const text = (await pending.textContent())!;
    expect(text).toContain('invited by Owen Owner');
    expect(text).toContain('expires in 7 d');
    expect(await seriousViolations(ownerPage)).toEqual([]);

    await pending
      .getByRole('button', { name: 'Revoke the invitation of late@people.test' })
      .click();
    // The revoked invitation leaves the pending list for the earlier ones.
    await expect
      .poll(() => ownerPage.locator('li[data-invitation="late@people.test"]').textContent())
      .toContain('revoked');
    expect(
      await ownerPage
        .getByRole('button', { name: 'Revoke the invitation of late@people.test' })
        .count(),
    ).toBe(0);
    expect(await seriousViolations(ownerPage)).toEqual([]);
    const { rows: invitation } = await stack.db.pool.query(
      'SELECT id FROM invitations WHERE email = $1',
      ['late@people.test'],
    );
    expect(await auditOf('member.revoke_invitation', `invitations/${invitation[0].id}`)).toEqual([
      { actor_kind: 'account', actor_account_id: owner.id },
    ]);

    const invited = await (await stack.newContext()).newPage();
    await invited.goto(path);
    const refusal = invited.locator('main [data-code]');
    expect(await refusal.getAttribute('data-code')).toBe('invitation_revoked');
    expect(await refusal.textContent()).toContain('revoked by an owner');
    expect(await invited.getByRole('button', { name: 'Join' }).count()).toBe(0);
    expect(await seriousViolations(invited)).toEqual([]);
    const { rows } = await stack.db.pool.query('SELECT 1 FROM accounts WHERE email = $1', [
      'late@people.test',
    ]);
    expect(rows).toEqual([]);
  }, 120_000);

  it('X6 an invitation link shows the same form whether or not its address has an account, and a wrong password at sign-in answers alike', async () => {
    const owner = await account('oda@people.test', 'Oda Owner', 'owner');
    await account('known@people.test', 'Known Person');
    const formOf = async (email: string) => {
      const { token } = await createInvitation(
        stack.db.pool,
        { kind: 'account', id: owner.id, name: owner.name },
        { workspaceId: ws, email, role: 'viewer', ttlSeconds: 3600 },
      );
      const page = await (await stack.newContext()).newPage();
      await page.goto(`/invite/${token}`);
      const form = page.locator('main form');
      // The form as a person and a script read it: its labels and fields, the token aside.
      const shape = await form.evaluate((f) =>
        [...f.querySelectorAll('label, input')].map((e) =>
          e instanceof HTMLInputElement
            ? `${e.name}:${e.type}:${e.autocomplete}:${e.type === 'hidden' ? '' : e.value}`
            : e.textContent,
        ),
      );
      expect(await seriousViolations(page)).toEqual([]);
      return shape;
    };
    const known = await formOf('known@people.test');
    expect(known).toEqual(await formOf('unknown@people.test'));
    expect(known.join(' ')).not.toContain('Your password');

    const refusalFor = async (email: string) => {
      const page = await (await stack.newContext()).newPage();
      await page.goto('/signin');
      await page.getByLabel('Email').fill(email);
      await page.getByLabel('Password').fill('not the password at all');
      await page.getByRole('button', { name: 'Sign in', exact: true }).click();
      return page.getByRole('alert').filter({ hasText: /\w/ }).textContent();
    };
    expect(await refusalFor('known@people.test')).toBe(await refusalFor('unknown@people.test'));
  }, 120_000);
});
