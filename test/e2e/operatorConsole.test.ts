import { describe, expect, it } from 'vitest';
import { CLI_ACTOR } from '../../core/actor';
import { createOperatorKey } from '../../db/operatorKeys';
import { withTransaction } from '../../db/pool';
import { pauseQueue } from '../../db/providerState';
import { createWorkspace } from '../../db/workspaces';
import { createProviderRegistry } from '../../providers/registry';
import { SimulatedProvider } from '../../providers/simulated';
import { screenshots, seriousViolations } from '../support/browser';
import { consoleStack } from '../support/consoleStack';
import { eventually } from '../support/quire';

/**
 * M1/M4: the console's operator view in Debian's Chromium against a real `next start`, a real
 * Temporal dev server and worker (simulated engine). No slot dispatcher runs here, so jobs
 * over a cap stay waiting until the operator changes the cap from the console.
 */
let A: { ws: number; key: string };
let B: { ws: number; key: string };
let operatorKey: string;

async function waitingOf(ws: number): Promise<number> {
  const { rows } = await stack.quire.db.pool.query(
    `SELECT count(*)::int AS n FROM transcription_jobs WHERE workspace_id = $1 AND awaiting_slot AND status = 'pending'`,
    [ws],
  );
  return rows[0].n;
}

const stack = consoleStack({
  quire: {
    config: {},
    providers: createProviderRegistry([new SimulatedProvider({ latencyMs: 100 })]),
  },
  worker: 'e2e-operator-worker',
  blobDir: false,
  beforeWeb: async ({ quire }) => {
    const a = await createWorkspace(quire.db.pool, 'Parish registers');
    const b = await createWorkspace(quire.db.pool, 'Oral histories');
    A = { ws: a.workspace.id, key: a.apiKey };
    B = { ws: b.workspace.id, key: b.apiKey };
    operatorKey = (await createOperatorKey(quire.db.pool, CLI_ACTOR, 'e2e')).key;
  },
  web: () => ({
    QUIRE_DEFAULT_PROVIDER: 'simulated',
    QUIRE_ENABLE_SIMULATED: '1',
    QUIRE_RETRY_INITIAL_MS: '50',
    QUIRE_RETRY_MAX_MS: '200',
    QUIRE_HEARTBEAT_TIMEOUT_MS: '3000',
    LOG_LEVEL: 'silent',
  }),
});

describe('operator console (M1, M4)', () => {
  it('M1 an operator key signs in to the operator view; workspace pages send the operator there; a workspace session gets not-found', async () => {
    const operatorPage = await stack.signedInWithKey(operatorKey, '/operator');
    await expect
      .poll(() => operatorPage.getByRole('heading', { level: 1 }).textContent())
      .toBe('Operator');
    expect(await operatorPage.locator(`tr[data-workspace="${A.ws}"]`).isVisible()).toBe(true);
    expect(await operatorPage.locator(`tr[data-workspace="${B.ws}"]`).isVisible()).toBe(true);
    const cookie = (await operatorPage.context().cookies()).find((c) => c.name === 'quire_session');
    expect(cookie?.value).not.toContain(operatorKey);
    await operatorPage.goto('/jobs');
    expect(new URL(operatorPage.url()).pathname).toBe('/operator');

    const workspacePage = await stack.signedInWithKey(A.key, '/');
    const response = await workspacePage.goto('/operator');
    expect(response?.status()).toBe(404);
    expect(await workspacePage.locator('tr[data-workspace]').count()).toBe(0);
  });

  it('M4 jobs over a cap set in the console wait, the operator view counts them, and lifting the cap starts them; each change is in the audit log with before and after', async () => {
    const operatorPage = await stack.signedInWithKey(operatorKey, '/operator');
    const form = operatorPage.locator(`form[data-workspace="${B.ws}"]`);
    await form.getByLabel('Active-job cap').fill('1');
    await form.getByLabel('every provider of the installation').uncheck();
    await form.getByLabel('simulated').check();
    await form.getByRole('button', { name: `Save workspace ${B.ws}` }).click();
    await expect
      .poll(() => form.getByRole('status').textContent(), { timeout: 15_000 })
      .toBe('Saved.');
    const stored = await stack.quire.db.pool.query(
      'SELECT active_job_cap, enabled_providers FROM workspaces WHERE id = $1',
      [B.ws],
    );
    expect(stored.rows[0]).toEqual({ active_job_cap: 1, enabled_providers: ['simulated'] });

    // Three jobs: the first takes the one slot, two wait (no dispatcher runs in this test).
    const jobs: string[] = [];
    for (let i = 0; i < 3; i++) {
      const pageId = await stack.quire.page(B.ws);
      jobs.push((await stack.quire.client.startJob({ workspaceId: B.ws, pageId })).jobId);
    }
    await eventually(async () => ((await waitingOf(B.ws)) === 2 ? true : undefined));
    await operatorPage.reload();
    expect(await operatorPage.getByTestId(`waiting-${B.ws}`).textContent()).toBe('2');

    await form.getByLabel('Active-job cap').fill('');
    await form.getByRole('button', { name: `Save workspace ${B.ws}` }).click();
    await expect
      .poll(() => form.getByRole('status').textContent(), { timeout: 15_000 })
      .toBe('Saved.');
    await eventually(async () => {
      const { rows } = await stack.quire.db.pool.query(
        `SELECT count(*)::int AS n FROM transcription_jobs WHERE id = ANY($1) AND status = 'completed'`,
        [jobs],
      );
      return rows[0].n === 3 ? true : undefined;
    }, 60_000);

    await operatorPage.reload();
    const audit = operatorPage.getByTestId('audit-log');
    const capRows = audit.locator('tr[data-action="workspace.job_cap"]');
    expect(await capRows.count()).toBe(2);
    // Newest first: lifted (1 -> none), then set (none -> 1).
    expect(await capRows.nth(0).textContent()).toContain('{"activeJobCap":1}{"activeJobCap":null}');
    expect(await capRows.nth(1).textContent()).toContain('{"activeJobCap":null}{"activeJobCap":1}');
    expect(await audit.locator('tr[data-action="workspace.providers"]').textContent()).toContain(
      '["simulated"]',
    );

    // The workspace sees its own rows; the other workspace sees none of them.
    const bPage = await stack.signedInWithKey(B.key, '/');
    await bPage.goto('/audit');
    expect(await bPage.locator('tr[data-action="workspace.job_cap"]').count()).toBe(2);
    const aPage = await stack.signedInWithKey(A.key, '/');
    await aPage.goto('/audit');
    expect(await aPage.locator('tr[data-action]').count()).toBe(0);
  });

  it('M4 the global budget and a paused provider are handled from the operator view, audited, and the view passes axe', async () => {
    await withTransaction(stack.quire.db.pool, (client) =>
      pauseQueue(client, 'openai-chat', 'credit', undefined, new Date()),
    );
    const operatorPage = await stack.signedInWithKey(operatorKey, '/operator');
    const row = operatorPage.locator('tr[data-provider="openai-chat"]');
    expect(await row.getAttribute('data-state')).toBe('paused');
    await row.getByRole('button', { name: 'Resume openai-chat' }).click();
    await expect
      .poll(() =>
        operatorPage.locator('tr[data-provider="openai-chat"]').getAttribute('data-state'),
      )
      .toBe('active');

    const limits = operatorPage.getByRole('form', { name: 'Installation controls' });
    await limits.getByLabel('Global daily budget').fill('7000000');
    await limits.getByRole('button', { name: 'Save installation limits' }).click();
    await expect
      .poll(() => limits.getByRole('status').textContent(), { timeout: 15_000 })
      .toBe('Saved.');
    const setting = await stack.quire.db.pool.query(
      `SELECT value FROM settings WHERE key = 'global_daily_budget_micros'`,
    );
    expect(setting.rows[0].value).toBe(7_000_000);

    await operatorPage.reload();
    const audit = operatorPage.getByTestId('audit-log');
    expect(await audit.locator('tr[data-action="provider.resume"]').textContent()).toContain(
      '"status":"paused"',
    );
    expect(
      await audit.locator('tr[data-action="installation.daily_budget"]').textContent(),
    ).toContain('{"dailyBudgetMicros":7000000}');
    expect(await seriousViolations(operatorPage)).toEqual([]);
    expect(await screenshots(operatorPage, 'operator')).toHaveLength(2);
  });
});
