import type { Page } from 'playwright-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { CLI_ACTOR } from '../../core/actor';
import { segmentsOf } from '../../core/annotation';
import type { Role } from '../../core/roles';
import { createAccount, putMember } from '../../db/accounts';
import { getPage } from '../../db/pages';
import { withTransaction } from '../../db/pool';
import { commitRevision } from '../../db/revisions';
import { createSession } from '../../db/sessions';
import { createWorkspace } from '../../db/workspaces';
import { screenshots } from '../support/browser';
import { consoleStack } from '../support/consoleStack';
import { file, multipartBody, wav } from '../support/uploadFixtures';

/**
 * V11 in Debian's Chromium against a real `next start` on PostgreSQL: a recording whose engine
 * gave no speaker labels (pocketsphinx gives none) gets its speakers named from the page view,
 * for a span of lines and for one line, and renamed on every line; no line's state changes,
 * each change is a revision that says speakers were named, audited with the person. A role
 * that may not edit is not offered the control.
 */
let ws: number;
let apiKey: string;
let pageId: number;
const people = new Map<Role, { id: number; name: string; cookie: string }>();

const LINES = [
  'good morning and thank you for coming',
  'thank you for having me',
  'it was a long way from the harbour',
  'tell me about the harbour then',
];

function signedIn(role: Role): Promise<Page> {
  return stack.withSessionCookie(people.get(role)!.cookie);
}

async function currentLines() {
  const page = await getPage(stack.db.pool, ws, pageId);
  return { revision: page!.revision, lines: segmentsOf(page!.annotationPage) };
}

const stack = consoleStack({
  beforeWeb: async ({ db }) => {
    const created = await createWorkspace(db.pool, 'Oral history');
    ws = created.workspace.id;
    apiKey = created.apiKey;
  },
  web: () => ({ LOG_LEVEL: 'warn' }),
  timeout: 900_000,
});

// Registered after the stack: the people and the recording, uploaded through the console.
beforeAll(async () => {
  for (const [role, name] of [
    ['editor', 'Eda Editor'],
    ['viewer', 'Vera Viewer'],
  ] as const) {
    const account = await createAccount(stack.db.pool, CLI_ACTOR, {
      email: `${role}@speakers.test`,
      name,
      passwordHash: null,
    });
    await putMember(stack.db.pool, CLI_ACTOR, { workspaceId: ws, accountId: account.id, role });
    const session = await createSession(
      stack.db.pool,
      { accountId: account.id, workspaceId: ws },
      3600,
    );
    people.set(role, { id: account.id, name, cookie: `quire_session=${session}` });
  }
  const response = await fetch(`${stack.web.url}/api/v1/workspaces/${ws}/batches`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${apiKey}`,
      'content-type': 'multipart/form-data; boundary=----quire-test-boundary-7c1d',
    },
    body: new Uint8Array(multipartBody([file(wav(8000), 'interview.wav')])),
  });
  expect(response.status).toBe(201);
  pageId = (await response.json()).pages[0].pageId;
  // The engine's reading, as pocketsphinx gives it: timed lines, no speaker labels.
  await withTransaction(stack.db.pool, (client) =>
    commitRevision(client, {
      pageId,
      expectedRevision: 0,
      segments: LINES.map((text, index) => ({
        index,
        text,
        target: { kind: 't', start: index * 2, end: index * 2 + 2 },
        confidence: 0.8,
      })),
      language: 'en',
      provenance: {
        source: 'engine',
        engine: { engine: 'pocketsphinx', model: 'en-us', version: '5.0' },
        jobId: '00000000-0000-4000-8000-000000000011',
        attemptNumber: 1,
      },
    }),
  );
}, 900_000);

describe('speakers in the page view (V11)', () => {
  it('V11 on a recording with no speaker labels, an editor names a speaker for a span of lines and for one line and renames a speaker on every line; no line is marked edited, each change is a revision that says so, audited with the person', async () => {
    const editor = people.get('editor')!;
    const page = await signedIn('editor');
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    await page.goto(`/pages/${pageId}`);
    const speakers = page.getByRole('region', { name: 'Speakers' });
    expect(await page.locator('.lines .speaker').count()).toBe(0);
    // No labels yet: a span can be named, nothing can be renamed.
    expect(await speakers.getByRole('button', { name: 'Rename on every line' }).count()).toBe(0);
    const saved = (revision: number) =>
      expect
        .poll(() =>
          page
            .getByRole('status')
            .filter({ hasText: `Saved as revision ${revision}.` })
            .count(),
        )
        .toBe(1);

    // Lines 2 to 4 (a span).
    const assign = speakers.locator('form.speaker-assign');
    await assign.locator('select[name="from"]').selectOption({ label: '2 (0:02.0)' });
    await assign.locator('select[name="to"]').selectOption({ label: '4 (0:06.0)' });
    await speakers.getByLabel('are spoken by').fill('Interviewee');
    await speakers.getByRole('button', { name: 'Name speaker' }).click();
    await saved(2);
    let now = await currentLines();
    expect(now.revision).toBe(2);
    expect(now.lines.map((l) => l.speaker ?? null)).toEqual([
      null,
      'Interviewee',
      'Interviewee',
      'Interviewee',
    ]);

    // One line: the line selected in the transcript is the span.
    await page.locator('.lines li[data-line="3"] .line-button').click();
    await expect.poll(() => assign.locator('select[name="to"]').inputValue()).toBe('3');
    await speakers.getByLabel('are spoken by').fill('Interviewer');
    await speakers.getByRole('button', { name: 'Name speaker' }).click();
    await saved(3);
    await page.locator('.lines li[data-line="0"] .line-button').click();
    await expect.poll(() => assign.locator('select[name="from"]').inputValue()).toBe('0');
    await speakers.getByLabel('are spoken by').fill('Interviewer');
    await speakers.getByRole('button', { name: 'Name speaker' }).click();
    await saved(4);

    // Renamed on every line that carries the label.
    const rename = speakers.locator('form.speaker-rename');
    await rename.locator('select[name="from"]').selectOption('Interviewee');
    await rename.locator('input[name="to"]').fill('Mrs Ada Byron');
    await speakers.getByRole('button', { name: 'Rename on every line' }).click();
    await saved(5);
    await expect
      .poll(() => page.locator('.lines .speaker').allTextContents())
      .toEqual(['Interviewer', 'Mrs Ada Byron', 'Mrs Ada Byron', 'Interviewer']);

    now = await currentLines();
    expect(now.revision).toBe(5);
    expect(now.lines.map((l) => [l.text, l.speaker, l.stamp?.state ?? 'machine'])).toEqual([
      [LINES[0], 'Interviewer', 'machine'],
      [LINES[1], 'Mrs Ada Byron', 'machine'],
      [LINES[2], 'Mrs Ada Byron', 'machine'],
      [LINES[3], 'Interviewer', 'machine'],
    ]);
    // The lines keep their state on screen too.
    expect(new Set(await page.locator('.lines .line-state').allTextContents())).toEqual(
      new Set(['machine']),
    );
    const revisions = await stack.db.pool.query(
      `SELECT revision, author_kind, author_id, provenance FROM page_revisions
        WHERE page_id = $1 AND revision >= 2 ORDER BY revision`,
      [pageId],
    );
    expect(revisions.rows).toEqual(
      [2, 3, 4, 5].map((revision) => ({
        revision,
        author_kind: 'account',
        author_id: editor.id,
        provenance: { change: 'speakers' },
      })),
    );
    const audit = await stack.db.pool.query(
      `SELECT actor_account_id, after FROM audit_log
        WHERE action = 'page.edit' AND target = $1 ORDER BY id`,
      [`pages/${pageId}`],
    );
    expect(audit.rows.map((r) => r.after)).toEqual([
      { revision: 2, edited: 0, verified: 0, other: 3, speakers: 3 },
      { revision: 3, edited: 0, verified: 0, other: 1, speakers: 1 },
      { revision: 4, edited: 0, verified: 0, other: 1, speakers: 1 },
      { revision: 5, edited: 0, verified: 0, other: 2, speakers: 2 },
    ]);
    expect(audit.rows.map((r) => Number(r.actor_account_id))).toEqual([
      editor.id,
      editor.id,
      editor.id,
      editor.id,
    ]);

    // The revision history says who named speakers, by name.
    await page.reload();
    const latest = page.locator('td[data-label="By"]').first();
    expect(await latest.locator('.actor').textContent()).toBe(editor.name);
    expect(await latest.locator('[data-change="speakers"]').textContent()).toContain(
      'speakers named',
    );
    await screenshots(page, 'speakers-page');
    expect(errors).toEqual([]);

    // A viewer reads the speakers and is offered nothing to change them with.
    const viewer = await signedIn('viewer');
    await viewer.goto(`/pages/${pageId}`);
    expect(await viewer.locator('.lines .speaker').count()).toBe(4);
    expect(await viewer.getByRole('region', { name: 'Speakers' }).count()).toBe(0);
    expect(await viewer.locator('[data-act="page.edit"]').count()).toBe(0);
  }, 240_000);
});
