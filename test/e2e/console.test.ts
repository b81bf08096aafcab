import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { segmentsOf } from '../../core/annotation';
import { getJob, listAttempts } from '../../db/jobs';
import { getPage, getRevision } from '../../db/pages';
import { createWorkspace } from '../../db/workspaces';
import { createProviderRegistry } from '../../providers/registry';
import { SimulatedProvider } from '../../providers/simulated';
import { NativeTesseractProvider } from '../../providers/tesseractNative';
import { createWebhookRelay, type WebhookRelay } from '../../worker/webhookRelay';
import { screenshots, seriousViolations } from '../support/browser';
import { consoleStack, signInWithKey } from '../support/consoleStack';
import { type HttpsReceiver, startHttpsReceiver } from '../support/httpsReceiver';
import { ingestWithJobs } from '../support/ingest';
import { KANT } from '../support/interchange';
import { eventually, untilStatus } from '../support/quire';

/**
 * C (SPEC §9): the console in Debian's Chromium against the real stack: a fresh database, a
 * real Temporal dev server and worker (simulated provider, one second per call so progress
 * can be watched), a real `next start`, and a local HTTPS webhook receiver. Those are shared;
 * each scenario makes its own workspace, pages and jobs and signs in from a fresh browser
 * context, so any one of them runs alone (`-t`) or in any order.
 */
const TEMPORAL_UI = 'http://temporal-ui.test';
const quietRelayLogger = { debug() {}, info() {}, warn() {}, error() {} };

const tesseract = new NativeTesseractProvider();
let receiver: HttpsReceiver;
let relay: WebhookRelay | undefined;
let files: string;

// Registered before the stack: made before it, gone after it.
beforeAll(async () => {
  files = mkdtempSync(join(tmpdir(), 'quire-e2e-'));
  renderPageImage(join(files, 'register-p1.png'), [
    'Baptisms in the parish of Saint Mary, 1791',
    'John, son of William Hart and Anne his wife',
    'Mary, daughter of Thomas Reed, labourer',
    'Elizabeth, daughter of James Cole, weaver',
    'Samuel, son of Richard Moss and Jane his wife',
    'Hannah, daughter of George Hill, carpenter',
    'Thomas, son of Edward Lamb, shoemaker',
    'Witnessed by the curate, Henry Ashby',
  ]);
  renderPageImage(join(files, 'register-p2.png'), [
    'Burials, 1792',
    'Ann Webb, aged 70',
    'Joseph Crane, infant',
  ]);
  writeFileSync(join(files, 'notes.txt'), 'not a page');
  writeFileSync(join(files, 'fake.png'), 'this is text pretending to be a PNG image');

  receiver = await startHttpsReceiver();
});

afterEach(async () => {
  await relay?.stop({ graceMs: 1000 });
  relay = undefined;
});

afterAll(async () => {
  await receiver?.close();
  if (files) rmSync(files, { recursive: true, force: true });
});

const stack = consoleStack({
  quire: {
    config: () => ({ QUIRE_WEBHOOK_ALLOW_HOSTS: receiver.allowHost }),
    // V9: tesseract beside the simulated engine, for the Fraktur upload.
    providers: createProviderRegistry([new SimulatedProvider({ latencyMs: 1000 }), tesseract]),
  },
  worker: 'e2e-worker',
  web: () => ({
    QUIRE_DEFAULT_PROVIDER: 'simulated',
    QUIRE_ENABLE_SIMULATED: '1',
    QUIRE_RETRY_INITIAL_MS: '50',
    QUIRE_RETRY_MAX_MS: '200',
    QUIRE_HEARTBEAT_TIMEOUT_MS: '3000',
    QUIRE_TEMPORAL_UI_URL: TEMPORAL_UI,
    QUIRE_WEBHOOK_ALLOW_HOSTS: receiver.allowHost,
    LOG_LEVEL: 'silent',
  }),
  beforeClose: () => tesseract.close(),
});

interface Session {
  workspaceId: number;
  apiKey: string;
  context: BrowserContext;
  page: Page;
}

/** A workspace of the test's own, signed in through the sign-in page in a fresh context. */
async function signedIn(name: string): Promise<Session> {
  const { workspace, apiKey } = await createWorkspace(stack.quire.db.pool, name);
  const context = await stack.newContext();
  const page = await context.newPage();
  page.on('dialog', (dialog) => void dialog.accept());
  await signInWithKey(page, apiKey);
  return { workspaceId: workspace.id, apiKey, context, page };
}

/**
 * The first register page uploaded through the ingest as the API does, its job run to the
 * end: what a scenario that starts from a transcribed page needs. The engine answers at once
 * here; only the upload scenario watches progress at the console's pace.
 */
async function transcribedPage(
  workspaceId: number,
): Promise<{ batchId: string; pageId: number; jobId: string }> {
  const form = new FormData();
  form.append('itemId', `register-${randomUUID()}`);
  form.append(
    'files[]',
    new Blob([new Uint8Array(readFileSync(join(files, 'register-p1.png')))], {
      type: 'image/png',
    }),
    'register-p1.png',
  );
  const { result, records } = await ingestWithJobs(stack.quire, workspaceId, form, {
    provider: 'simulated',
    options: { simulated: { latencyMs: 0 } },
  });
  const [record] = records;
  await untilStatus(stack.quire, workspaceId, record!.id, 'completed');
  return { batchId: result.batchId, pageId: record!.pageId, jobId: record!.id };
}

/** A new revision of one line, saved through the HTTP API on top of the current one. */
async function saveLineThroughApi(
  session: Session,
  pageId: number,
  index: number,
  text: string,
): Promise<void> {
  const current = (await getPage(stack.quire.db.pool, session.workspaceId, pageId))!;
  const segments = segmentsOf(current.annotationPage).map((s) =>
    s.index === index ? { ...s, text } : s,
  );
  const put = await fetch(
    `${stack.web.url}/api/v1/workspaces/${session.workspaceId}/pages/${pageId}`,
    {
      method: 'PUT',
      headers: {
        authorization: `Bearer ${session.apiKey}`,
        'content-type': 'application/json',
        'if-match': `"${current.revision}"`,
      },
      body: JSON.stringify({ segments }),
    },
  );
  expect(put.status).toBe(200);
}

function renderPageImage(path: string, lines: string[]) {
  // 1800 x 700: the simulated engine finds eight 1600 x 48 lines from (100, 120), 60 apart.
  const args = [
    '-size',
    '1800x700',
    'xc:white',
    '-font',
    'Liberation-Serif',
    '-pointsize',
    '38',
    '-fill',
    'black',
  ];
  lines.forEach((line, i) => {
    args.push('-annotate', `+110+${160 + i * 60}`, line);
  });
  execFileSync('/usr/bin/convert', [...args, path]);
}

async function waitForLive(p: Page) {
  await p.waitForSelector('[data-live="live"]', { timeout: 15_000 });
}

describe('console (C)', () => {
  it('C sign-in: pages redirect to sign-in without a session, a wrong key is refused, the workspace key signs in', async () => {
    const { workspace, apiKey } = await createWorkspace(stack.quire.db.pool, 'Parish registers');
    const workspaceId = workspace.id;
    const context = await stack.newContext();
    const page = await context.newPage();
    await page.goto('/jobs');
    expect(new URL(page.url()).pathname).toBe('/signin');
    const anonymous = await page.request.get('/console-api/live?topics=jobs');
    expect(anonymous.status()).toBe(401);
    await page.getByLabel('Workspace API key').fill(`qk_${workspaceId}_wrong`);
    await page.getByRole('button', { name: 'Sign in with a key' }).click();
    await expect.poll(() => page.locator('#signin-error').textContent()).toContain('not valid');
    await page.getByLabel('Workspace API key').fill(apiKey);
    await page.getByRole('button', { name: 'Sign in with a key' }).click();
    // F4: the editor lands on the archive; jobs are one click away.
    await page.waitForURL((url) => url.pathname === '/');
    await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe('Archive');
    expect(await page.getByText('No items here').isVisible()).toBe(true);
    await page
      .getByRole('navigation', { name: 'Main' })
      .getByRole('link', { name: 'Jobs' })
      .click();
    await page.waitForURL('**/jobs');
    await expect
      .poll(() => page.getByRole('heading', { level: 1 }).textContent())
      .toBe('Transcription jobs');
    expect(await page.getByText('No transcription jobs yet').isVisible()).toBe(true);
    const cookie = (await context.cookies()).find((c) => c.name === 'quire_session');
    expect(cookie?.httpOnly).toBe(true);
    expect(cookie?.sameSite).toBe('Strict');
    expect(cookie?.value).not.toContain(apiKey);
  });

  it('C upload: per-file validation, then a rendered page image becomes a batch whose job reaches completed live', async () => {
    const { workspaceId, page } = await signedIn('Parish registers');
    await page.goto('/upload');
    // Q2: the console says which engine reads what, and that offline speech is weak on real audio.
    await expect
      .poll(() => page.locator('aside.engine-note').textContent())
      .toContain('weak on real recordings');
    const input = page.locator('input[type="file"]');
    await input.setInputFiles([
      join(files, 'register-p1.png'),
      join(files, 'notes.txt'),
      join(files, 'fake.png'),
    ]);
    // Checked in the browser: a text file is not offered for upload.
    await expect
      .poll(() => page.locator('li[data-file="notes.txt"]').textContent())
      .toContain('Not an image or audio file');
    await page.getByRole('button', { name: 'Remove notes.txt' }).click();
    // Sniffed like the ingest does (magic bytes): a text file named .png is refused too.
    await expect
      .poll(() => page.locator('li[data-file="fake.png"]').textContent())
      .toContain('contents are not');
    expect(await page.locator('li[data-file="register-p1.png"]').textContent()).toContain('Ready');
    await page.getByRole('button', { name: 'Remove fake.png' }).click();
    expect(
      await stack.quire.db.pool
        .query('SELECT count(*)::int AS n FROM pages WHERE workspace_id = $1', [workspaceId])
        .then((r) => r.rows[0].n),
    ).toBe(0);

    await page.getByRole('button', { name: 'Upload', exact: true }).click();
    await page.waitForURL('**/batches/**');
    const batchId = decodeURIComponent(new URL(page.url()).pathname.split('/').pop()!);
    await waitForLive(page);
    // A marker that a reload would wipe: the row must change in place.
    await page.evaluate(() => {
      (window as unknown as { quireMarker: boolean }).quireMarker = true;
    });
    const row = page.locator('tr[data-job-id]');
    await expect.poll(() => row.count()).toBe(1);
    expect(await row.getAttribute('data-status')).not.toBe('completed');
    const jobId = (await row.getAttribute('data-job-id'))!;
    await page.waitForSelector('tr[data-job-id][data-status="completed"]', { timeout: 60_000 });
    expect(
      await page.evaluate(() => (window as unknown as { quireMarker?: boolean }).quireMarker),
    ).toBe(true);
    expect(await row.textContent()).toContain('8 / 0 / 8');

    const job = await getJob(stack.quire.db.pool, workspaceId, jobId);
    expect(job?.status).toBe('completed');

    // The jobs list, filtered by this batch, shows the same job completed.
    await page.goto(`/jobs?batch=${encodeURIComponent(batchId)}&status=completed`);
    expect(await page.locator(`tr[data-job-id="${jobId}"]`).getAttribute('data-status')).toBe(
      'completed',
    );

    // Job detail: the attempt audit, and the workflow id to quote; R4: no link into the
    // Temporal UI for a workspace session (it is the operators').
    await page.goto(`/jobs/${jobId}`);
    expect(await page.locator('tr[data-attempt="1"]').getAttribute('data-outcome')).toBe(
      'completed',
    );
    expect(await page.getByRole('link', { name: /Temporal UI/ }).count()).toBe(0);
    expect(await page.locator(`[data-workflow-id="${job!.workflowId}"]`).count()).toBe(1);
    expect(await page.locator('.step-done').count()).toBe(4);
  });

  it('C page view: boxes over the image, an edit meets a concurrent API edit, both texts are shown and neither is lost; diff; publish', async () => {
    const session = await signedIn('Parish registers');
    const { workspaceId, apiKey, page } = session;
    const { pageId } = await transcribedPage(workspaceId);
    await page.goto(`/pages/${pageId}`);
    // V7: drawn through the page's Image API at a srcset width near the size shown, never
    // wider than the 1800-pixel master.
    await page.waitForFunction(() => {
      const img = document.querySelector('figure.canvas img') as HTMLImageElement | null;
      return (
        img?.complete &&
        img.naturalWidth > 0 &&
        img.naturalWidth <= 1800 &&
        new URL(img.currentSrc).pathname.includes('/image/')
      );
    });
    expect(await page.locator('rect.box').count()).toBe(8);
    // Hovering a transcript line highlights its box, and hovering a box highlights its line.
    await page.locator('li[data-line="2"] button').hover();
    expect(await page.locator('rect[data-line="2"]').getAttribute('class')).toContain('box-active');
    await page.locator('rect[data-line="5"]').hover({ force: true });
    expect(await page.locator('li[data-line="5"]').getAttribute('class')).toContain('line-active');

    const before = (await getPage(stack.quire.db.pool, workspaceId, pageId))!;
    const base = before.revision;
    await page.getByRole('button', { name: 'Edit', exact: true }).click();
    await page
      .getByLabel('Line 1', { exact: true })
      .fill('Baptisms in the parish of St Mary, 1791 (console)');

    // Meanwhile an integrator saves the same line through the HTTP API (If-Match = base).
    const segments = segmentsOf(before.annotationPage).map((s) =>
      s.index === 0 ? { ...s, text: 'Baptisms in the parish of Saint Mary, 1791 (api)' } : s,
    );
    const put = await fetch(`${stack.web.url}/api/v1/workspaces/${workspaceId}/pages/${pageId}`, {
      method: 'PUT',
      headers: {
        authorization: `Bearer ${apiKey}`,
        'content-type': 'application/json',
        'if-match': `"${base}"`,
      },
      body: JSON.stringify({ segments }),
    });
    expect(put.status).toBe(200);

    await page.getByRole('button', { name: /Save 1 change/ }).click();
    const conflict = page.getByTestId('conflict');
    await conflict.waitFor();
    expect(await page.getByTestId('mine-0').textContent()).toBe(
      'Baptisms in the parish of St Mary, 1791 (console)',
    );
    expect(await page.getByTestId('theirs-0').textContent()).toBe(
      'Baptisms in the parish of Saint Mary, 1791 (api)',
    );
    expect((await getPage(stack.quire.db.pool, workspaceId, pageId))!.revision).toBe(base + 1);
    await screenshots(page, 'page-conflict');

    await page.getByRole('button', { name: `Save on top of revision ${base + 1}` }).click();
    await expect
      .poll(() => page.getByRole('status').filter({ hasText: 'Saved as revision' }).textContent())
      .toContain(`${base + 2}`);
    const after = (await getPage(stack.quire.db.pool, workspaceId, pageId))!;
    expect(after.revision).toBe(base + 2);
    expect(segmentsOf(after.annotationPage)[0]!.text).toBe(
      'Baptisms in the parish of St Mary, 1791 (console)',
    );
    const theirs = await getRevision(stack.quire.db.pool, workspaceId, pageId, base + 1);
    expect(segmentsOf(theirs!.annotationPage)[0]!.text).toBe(
      'Baptisms in the parish of Saint Mary, 1791 (api)',
    );
    expect(segmentsOf(after.annotationPage).slice(1)).toEqual(
      segmentsOf(before.annotationPage).slice(1),
    );

    // The diff between the API's revision and the console's.
    await page.goto(`/pages/${pageId}?from=${base + 1}&to=${base + 2}`);
    expect(await page.locator('.diff-removed').textContent()).toContain('(api)');
    expect(await page.locator('.diff-added').textContent()).toContain('(console)');

    // Exports of the current revision, through the session.
    const text = await page.request.get(`/console-api/pages/${pageId}/export?format=text`);
    expect(text.status()).toBe(200);
    expect((await text.text()).split('\n')[0]).toBe(
      'Baptisms in the parish of St Mary, 1791 (console)',
    );
    const alto = await page.request.get(`/console-api/pages/${pageId}/export?format=alto`);
    expect(await alto.text()).toContain('<alto');
    expect((await page.request.get('/console-api/pages/999999/media')).status()).toBe(404);

    await page.getByRole('button', { name: `Publish revision ${base + 2}` }).click();
    await expect.poll(() => page.getByText(`Revision ${base + 2} published.`).count()).toBe(1);
    expect((await getPage(stack.quire.db.pool, workspaceId, pageId))!.publishedRevision).toBe(
      base + 2,
    );
  });

  it('C providers: a credit fault pauses the provider, the banner shows on every page, Resume lets the job finish', async () => {
    const { workspaceId, page } = await signedIn('Parish registers');
    const { pageId } = await transcribedPage(workspaceId);
    const started = await stack.quire.client.startJob({
      workspaceId,
      pageId,
      options: { simulated: { faults: [{ op: 'recognize', category: 'credit', attempts: [1] }] } },
    });
    await page.goto(`/jobs/${started.jobId}`);
    await waitForLive(page);
    // The banner arrives live, without a reload.
    const banner = page.getByTestId('paused-banner');
    await banner.waitFor({ timeout: 60_000 });
    expect(await banner.textContent()).toContain('out of credit');
    await page.goto('/operations');
    expect(await page.getByTestId('paused-banner').isVisible()).toBe(true);
    await page.goto('/providers');
    expect(await page.locator('tr[data-provider="simulated"]').getAttribute('data-state')).toBe(
      'paused',
    );
    await screenshots(page, 'providers-paused');
    await page.goto(`/jobs/${started.jobId}`);
    expect((await getJob(stack.quire.db.pool, workspaceId, started.jobId))!.status).toBe('pending');
    await page
      .getByTestId('paused-banner')
      .getByRole('button', { name: 'Resume simulated' })
      .click();
    await page.getByTestId('paused-banner').waitFor({ state: 'detached', timeout: 15_000 });
    await page.waitForSelector('[data-status="completed"]', { timeout: 60_000 });
    const attempts = await listAttempts(stack.quire.db.pool, started.jobId);
    expect(attempts.map((a) => [a.outcome, a.errorCategory, a.refunded])).toEqual([
      ['retryable_failed', 'credit', true],
      ['completed', null, false],
    ]);
    await page.reload();
    expect(await page.locator('tr[data-attempt="1"]').getAttribute('data-outcome')).toBe(
      'retryable_failed',
    );
    expect(await page.locator('tr[data-attempt="2"]').getAttribute('data-outcome')).toBe(
      'completed',
    );
  });

  it('C batch cancel: every active job of an uploaded batch is canceled from the batch page', async () => {
    const { page } = await signedIn('Parish registers');
    await page.goto('/upload');
    await page
      .locator('input[type="file"]')
      .setInputFiles([join(files, 'register-p1.png'), join(files, 'register-p2.png')]);
    await page.getByRole('button', { name: 'Upload 2 files' }).click();
    await page.waitForURL('**/batches/**');
    const batchId = decodeURIComponent(new URL(page.url()).pathname.split('/').pop()!);
    await page.getByRole('button', { name: 'Cancel batch' }).click();
    await expect
      .poll(() => page.getByText('2 jobs canceled.').count(), { timeout: 15_000 })
      .toBe(1);
    await expect
      .poll(() => page.locator('tr[data-status="canceled"]').count(), { timeout: 15_000 })
      .toBe(2);
    const { rows } = await stack.quire.db.pool.query(
      'SELECT status FROM transcription_jobs WHERE batch_id = $1',
      [batchId],
    );
    expect(rows.map((r) => r.status)).toEqual(['canceled', 'canceled']);
  });

  it('C webhooks: created with a secret generated in the browser and shown once; a re-run job is delivered and logged', async () => {
    const { workspaceId, page } = await signedIn('Parish registers');
    const { jobId } = await transcribedPage(workspaceId);
    // The receiver is shared: this workspace's deliveries are the ones sent to its own path.
    const target = `/quire-events/${workspaceId}`;
    const ours = () => receiver.requests.filter((r) => r.path === target);
    await page.goto('/webhooks');
    expect(await page.getByText('No webhooks yet').isVisible()).toBe(true);
    await page.getByLabel('Target URL').fill(`${receiver.origin}${target}`);
    await page.getByRole('button', { name: 'Generate' }).click();
    const secret = await page.getByLabel('Signing secret').inputValue();
    expect(secret.length).toBeGreaterThanOrEqual(32);
    await page.getByRole('button', { name: 'Create webhook' }).click();
    const once = page.getByTestId('secret-once');
    await once.waitFor();
    expect(await once.textContent()).toContain(secret);
    const subscription = await stack.quire.db.pool.query(
      'SELECT id, secret_ciphertext FROM webhook_subscriptions WHERE workspace_id = $1',
      [workspaceId],
    );
    expect(subscription.rows).toHaveLength(1);
    expect(String(subscription.rows[0].secret_ciphertext)).not.toContain(secret);
    // Once: a fresh render of the page never carries it.
    await page.reload();
    expect(await page.content()).not.toContain(secret);

    relay = createWebhookRelay({
      pool: stack.quire.db.pool,
      secretKey: stack.quire.config.QUIRE_SECRET_KEY,
      logger: quietRelayLogger,
      ca: receiver.ca,
      allowHosts: receiver.allowHost,
      pollIntervalMs: 200,
    });
    await relay.start();

    // Re-run the page's job: a new job for the page, which completes and is delivered.
    await page.goto(`/jobs/${jobId}`);
    await page.getByRole('button', { name: 'Re-run' }).click();
    await page.waitForURL(
      (url) => url.pathname.startsWith('/jobs/') && !url.pathname.endsWith(jobId),
    );
    await page.waitForSelector('[data-status="completed"]', { timeout: 60_000 });
    await receiver.waitFor(() => ours().length >= 1, 30_000);
    expect(ours()[0]!.headers['x-quire-signature']).toMatch(/^v1=[0-9a-f]{64}$/);

    await page.goto(`/webhooks/${subscription.rows[0].id}`);
    await eventually(async () => {
      await page.reload();
      return (await page.locator('tr[data-delivery][data-status="succeeded"]').count()) >= 1
        ? true
        : undefined;
    }, 30_000);
    expect(await page.locator('tr[data-delivery]').first().textContent()).toContain(
      'transcription.completed',
    );
  });

  it('I3 C upload with a transcript: the PAGE file beside the image becomes revision 1; the page offers PAGE, hOCR and its IIIF manifest', async () => {
    // Browsers send the scan as PNG here (the same pixels as the ground truth's TIFF).
    const { workspaceId, page } = await signedIn('Parish registers');
    const scan = join(files, 'kant-0017.png');
    execFileSync('/usr/bin/convert', [KANT.image, scan]);
    await page.goto('/upload');
    await page.locator('input[type="file"]').setInputFiles(scan);
    await page
      .getByLabel('Transcript of kant-0017.png, PAGE XML, ALTO or hOCR')
      .setInputFiles(KANT.page);
    await expect
      .poll(() => page.locator('li[data-file="kant-0017.png"]').textContent())
      .toContain('Transcript: kant_aufklaerung_1784_0017.page.xml');
    await page.getByRole('button', { name: 'Upload', exact: true }).click();
    await page.waitForURL('**/batches/**');
    const { rows } = await stack.quire.db.pool.query(
      'SELECT id, revision FROM pages WHERE workspace_id = $1 ORDER BY id DESC LIMIT 1',
      [workspaceId],
    );
    expect(rows[0].revision).toBe(1);
    await page.goto(`/pages/${rows[0].id}`);
    await expect
      .poll(() => page.locator('body').textContent())
      .toContain('imported PAGE from OCR-D');
    for (const label of ['PAGE XML', 'hOCR']) {
      const href = await page.getByRole('link', { name: label, exact: true }).getAttribute('href');
      const exported = await page.request.get(href!);
      expect(exported.status()).toBe(200);
      expect(await exported.text()).toContain('Berliniſche Monatsſchrift.');
    }
    const manifestHref = await page.getByTestId('iiif-manifest').getAttribute('href');
    const manifest = await page.request.get(manifestHref!);
    expect(manifest.status()).toBe(200);
    const body = await manifest.json();
    expect(body.type).toBe('Manifest');
    expect(body.items[0].annotations[0].items[0].body.value).toBe('Berliniſche Monatsſchrift.');
  });

  it('V9 a Fraktur upload chosen in the upload form reads the Kant page with the frk model', async () => {
    const { workspaceId, page } = await signedIn('Aufklärung');
    await page.goto('/upload');
    // The installed models are listed, Debian's Fraktur model among them, with its measured CER.
    await expect
      .poll(() => page.getByTestId('installed-models').textContent())
      .toContain('Fraktur');
    await page.locator('input[type="file"]').first().setInputFiles(KANT.image);
    const engine = page.getByLabel('Engine and language');
    const frk = await engine
      .locator('option', { hasText: 'tesseract · frk' })
      .getAttribute('value');
    await engine.selectOption(frk!);
    await page.getByRole('button', { name: 'Upload', exact: true }).click();
    await page.waitForURL('**/batches/**');
    await page.waitForSelector('tr[data-job-id][data-status="completed"]', { timeout: 90_000 });
    const jobId = (await page.locator('tr[data-job-id]').getAttribute('data-job-id'))!;
    await page.goto(`/jobs/${jobId}`);
    expect(await page.getByTestId('job-language').textContent()).toBe('frk');
    const job = await getJob(stack.quire.db.pool, workspaceId, jobId);
    expect(job?.snapshot).toMatchObject({ provider: 'tesseract', language: 'frk' });
    await page.goto(`/pages/${job!.pageId}`);
    // German in Fraktur: the long s and the title's words, as the English model cannot read them.
    const href = await page
      .getByRole('link', { name: 'PAGE XML', exact: true })
      .getAttribute('href');
    const exported = await (await page.request.get(href!)).text();
    expect(exported).toContain('Aufkl');
    expect(exported).toMatch(/iſt|ſeiner|Menſchen/);
  });

  it('C accessibility and layout: no serious or critical axe violations on any page, screenshots at 1280 and 375 px', async () => {
    const session = await signedIn('Parish registers');
    const { page } = session;
    // Every page shown with something on it: a transcribed page with two later revisions,
    // its job and batch, and a webhook.
    const { batchId, pageId, jobId } = await transcribedPage(session.workspaceId);
    await saveLineThroughApi(session, pageId, 0, 'Baptisms in the parish of St Mary, 1791');
    await saveLineThroughApi(session, pageId, 1, 'John, son of William Hart and Ann his wife');
    const created = await fetch(
      `${stack.web.url}/api/v1/workspaces/${session.workspaceId}/webhooks`,
      {
        method: 'POST',
        headers: { authorization: `Bearer ${session.apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          url: `${receiver.origin}/accessibility/${session.workspaceId}`,
          secret: `whsec-${randomUUID()}-${randomUUID()}`,
        }),
      },
    );
    expect(created.status).toBe(201);
    const webhookId = ((await created.json()) as { id: string }).id;
    const pages: Array<[string, string]> = [
      ['archive', '/'],
      ['search', '/search?q=line'],
      ['jobs', '/jobs'],
      ['job', `/jobs/${jobId}`],
      ['upload', '/upload'],
      ['batches', '/batches'],
      ['batch', `/batches/${batchId}`],
      ['page', `/pages/${pageId}`],
      ['page-diff', `/pages/${pageId}?from=1&to=3`],
      ['review', '/review'],
      ['providers', '/providers'],
      ['webhooks', '/webhooks'],
      ['webhook-deliveries', `/webhooks/${webhookId}`],
      ['operations', '/operations'],
    ];
    const failures: string[] = [];
    for (const [name, path] of pages) {
      await page.goto(path);
      await page.waitForLoadState('load');
      for (const v of await seriousViolations(page))
        failures.push(`${name}: ${v.id} (${v.impact}) ${v.help} at ${v.targets.join(', ')}`);
      const shots = await screenshots(page, name);
      expect(shots).toHaveLength(2);
    }
    // The sign-in page, in a context without a session.
    const anonymous = await stack.newContext();
    const signin = await anonymous.newPage();
    await signin.goto('/signin');
    for (const v of await seriousViolations(signin))
      failures.push(`signin: ${v.id} (${v.impact}) ${v.help} at ${v.targets.join(', ')}`);
    await screenshots(signin, 'signin');
    expect(failures).toEqual([]);
    // Keyboard: the skip link is the first stop and moves focus to the content.
    await page.goto('/jobs');
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Skip to content');
  });
});
