import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { lineStateOf, segmentsOf } from '../../core/annotation';
import { getJob } from '../../db/jobs';
import { getPage } from '../../db/pages';
import { createWorkspace } from '../../db/workspaces';
import { createProviderRegistry } from '../../providers/registry';
import { SimulatedProvider } from '../../providers/simulated';
import { TesseractProvider } from '../../providers/tesseract';
import { screenshots, seriousViolations } from '../support/browser';
import { consoleStack } from '../support/consoleStack';
import { MANIFESTO_PAGE } from '../support/fixtures';
import { ingestWithJobs } from '../support/ingest';
import { untilStatus } from '../support/quire';

/**
 * V2 V3 (SPEC §18): a reviewer works through the review queue of a real scan (the Communist
 * Manifesto page, read by the real offline engine, tesseract) in Debian's Chromium against
 * `next start`, with the keyboard alone; a re-run of the engine then keeps every line the
 * reviewer touched.
 */
const stack = consoleStack({
  quire: {
    config: { QUIRE_DEFAULT_PROVIDER: 'auto', QUIRE_HEARTBEAT_TIMEOUT_MS: '30000' },
    providers: createProviderRegistry([new TesseractProvider(), new SimulatedProvider()]),
  },
  worker: 'review-e2e-worker',
  web: () => ({
    QUIRE_DEFAULT_PROVIDER: 'auto',
    QUIRE_HEARTBEAT_TIMEOUT_MS: '30000',
    LOG_LEVEL: 'silent',
  }),
});

const REVIEWED = 20;

describe('review view (V2 V3)', () => {
  it('V2 V3 a reviewer works through 20 lines of the real manifesto scan with the keyboard only, corrects one and verifies the rest; the review view is axe-clean; a re-run keeps all 20', async () => {
    const { workspace, apiKey } = await createWorkspace(stack.quire.db.pool, 'Manifesto');
    const ws = workspace.id;
    const itemId = `manifesto-${randomUUID()}`;
    const form = new FormData();
    form.append('itemId', itemId);
    form.append(
      'files[]',
      new Blob([new Uint8Array(readFileSync(MANIFESTO_PAGE))], { type: 'image/png' }),
      'manifesto-page-0015.png',
    );
    const { records } = await ingestWithJobs(stack.quire, ws, form, { provider: 'tesseract' });
    const pageId = records[0]!.pageId;
    await untilStatus(stack.quire, ws, records[0]!.id, 'completed', 240_000);
    const read = segmentsOf((await getPage(stack.quire.db.pool, ws, pageId))!.annotationPage);
    expect(read.length).toBeGreaterThan(REVIEWED);

    const context = await stack.newContext();
    const page = await context.newPage();
    await page.goto('/signin');
    await page.getByLabel('Workspace API key').fill(apiKey);
    await page.keyboard.press('Enter');
    await page.waitForURL((url) => !url.pathname.startsWith('/signin'));
    await page.goto(`/review?item=${encodeURIComponent(itemId)}`);
    await page.getByTestId('line-crop').waitFor();
    await page.waitForFunction(() => {
      const img = document.querySelector('[data-testid="line-crop"]') as HTMLImageElement | null;
      return img?.complete && img.naturalWidth > 0;
    });
    const violations = await seriousViolations(page);
    expect(violations.map((v) => `${v.id}: ${v.help} at ${v.targets.join(', ')}`)).toEqual([]);
    await screenshots(page, 'review');

    // The queue's order: lowest engine confidence first.
    const queued = await page
      .locator('.review-list li .line-no')
      .evaluateAll((els) => els.map((e) => e.textContent ?? ''));
    expect(queued.length).toBe(read.length);
    const confidences = read.map((s) => Math.fround(s.confidence ?? 0));
    const byQueue = queued.map((label) => Number(label.split('·')[1]) - 1);
    const ordered = byQueue.map((i) => confidences[i]!);
    expect(ordered).toEqual([...ordered].sort((a, b) => a - b));

    const touched: number[] = [];
    const CORRECTED_AT = 3;
    const correction = 'A spectre is haunting Europe, corrected by hand';
    const review = page.getByTestId('review');
    // A key pressed while the last line is still saving is not taken; a reviewer sees "busy".
    const idle = () => expect.poll(() => review.getAttribute('aria-busy')).toBe('false');
    for (let step = 0; step < REVIEWED; step++) {
      await idle();
      const section = page.locator('section.review-line');
      const line = Number(await section.getAttribute('data-line'));
      touched.push(line);
      if (step === CORRECTED_AT) {
        await page.keyboard.press('e');
        const input = page.getByLabel(`Text of line ${line + 1}`);
        await input.waitFor();
        await page.keyboard.press('Control+A');
        await page.keyboard.type(correction);
        await page.keyboard.press('Enter');
        await expect
          .poll(() => page.getByRole('status').textContent())
          .toBe(`Line ${line + 1} of page ${pageId} saved.`);
      } else {
        await page.keyboard.press('v');
        await expect
          .poll(() => page.getByRole('status').textContent())
          .toBe(`Line ${line + 1} of page ${pageId} verified.`);
      }
      if (step < REVIEWED - 1) {
        await expect.poll(() => section.getAttribute('data-line')).not.toBe(String(line));
      }
    }
    expect(new Set(touched).size).toBe(REVIEWED);

    // Undo from the keyboard puts the last line back, and v verifies it again.
    const last = touched[REVIEWED - 1]!;
    await idle();
    await page.keyboard.press('u');
    await expect
      .poll(() => page.getByRole('status').textContent())
      .toBe(`Undone: line ${last + 1} of page ${pageId}.`);
    await expect
      .poll(async () =>
        lineStateOf(
          segmentsOf((await getPage(stack.quire.db.pool, ws, pageId))!.annotationPage).find(
            (s) => s.index === last,
          )!,
        ),
      )
      .toBe('machine');
    await idle();
    await page.keyboard.press('v');
    await expect
      .poll(() => page.getByRole('status').textContent())
      .toBe(`Line ${last + 1} of page ${pageId} verified.`);

    const reviewed = segmentsOf((await getPage(stack.quire.db.pool, ws, pageId))!.annotationPage);
    const states = new Map(reviewed.map((s) => [s.index, lineStateOf(s)]));
    expect(touched.filter((i) => states.get(i) === 'verified')).toHaveLength(REVIEWED - 1);
    expect(states.get(touched[CORRECTED_AT]!)).toBe('edited');
    expect(reviewed.find((s) => s.index === touched[CORRECTED_AT])!.text).toBe(correction);
    expect([...states.values()].filter((s) => s === 'machine')).toHaveLength(
      read.length - REVIEWED,
    );

    // A re-run of the engine: the 20 lines stay exactly as the reviewer left them.
    const rerun = await fetch(`${stack.web.url}/api/v1/workspaces/${ws}/transcription-jobs`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ pageId, provider: 'tesseract' }),
    });
    expect(rerun.status).toBe(202);
    const { jobId } = (await rerun.json()) as { jobId: string };
    await untilStatus(stack.quire, ws, jobId, 'completed', 240_000);
    expect((await getJob(stack.quire.db.pool, ws, jobId))!.keptSegments).toBe(REVIEWED);
    const after = segmentsOf((await getPage(stack.quire.db.pool, ws, pageId))!.annotationPage);
    for (const index of touched) {
      expect(after.find((s) => s.index === index)).toEqual(reviewed.find((s) => s.index === index));
    }
  });
});
