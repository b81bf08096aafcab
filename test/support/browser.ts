import { mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';

/**
 * Debian's Chromium driven by playwright-core for the console's end-to-end tests. The flags
 * keep Chromium off the network (this machine has none) and out of any shared profile;
 * playwright gives every launch a fresh user-data directory.
 */
const ROOT = join(__dirname, '../..');
export const ARTIFACTS = join(ROOT, 'test-artifacts', 'e2e');
const CHROMIUM = process.env.QUIRE_CHROMIUM ?? '/usr/bin/chromium';

export function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
    ],
  });
}

const axeSource = (() => {
  let source: string | undefined;
  return () => {
    source ??= readFileSync(createRequire(__filename).resolve('axe-core/axe.min.js'), 'utf8');
    return source;
  };
})();

export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  targets: string[];
}

/** axe-core on the page as it is now (WCAG 2.x A and AA rules); serious and critical only. */
export async function seriousViolations(page: Page): Promise<AxeViolation[]> {
  // Next streams a page's metadata: right after a server action re-renders the page, its
  // <title> may not be in the document yet. Checked once it is (or after 5 s, when a missing
  // title is the page's own and axe reports it).
  await page
    .waitForFunction(() => document.title.trim() !== '', undefined, { timeout: 5_000 })
    .catch(() => {});
  // Evaluated through the debugging protocol, not as a <script> tag: the console's
  // Content-Security-Policy (R6) refuses inline scripts without its nonce, as it should.
  await page.evaluate(axeSource());
  const violations = await page.evaluate(async () => {
    const axe = (
      window as unknown as {
        axe: {
          run: (
            ctx: unknown,
            opts: unknown,
          ) => Promise<{
            violations: Array<{
              id: string;
              impact: string | null;
              help: string;
              nodes: Array<{ target: unknown[] }>;
            }>;
          }>;
        };
      }
    ).axe;
    const result = await axe.run(document, {
      runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] },
    });
    return result.violations.map((v) => ({
      id: v.id,
      impact: v.impact,
      help: v.help,
      targets: v.nodes.slice(0, 5).map((n) => n.target.map(String).join(' ')),
    }));
  });
  return violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
}

/** Full-page screenshots of the current URL at a wide and a phone width. */
export async function screenshots(page: Page, name: string): Promise<string[]> {
  mkdirSync(ARTIFACTS, { recursive: true });
  const files: string[] = [];
  const original = page.viewportSize() ?? { width: 1280, height: 900 };
  for (const width of [1280, 375]) {
    await page.setViewportSize({ width, height: width === 375 ? 800 : 900 });
    await page.waitForTimeout(150);
    const file = join(ARTIFACTS, `${name}-${width}.png`);
    await page.screenshot({ path: file, fullPage: true });
    files.push(file);
  }
  await page.setViewportSize(original);
  return files;
}

/**
 * Browser contexts of a test's own (no cookie or storage of another test reaches them), all
 * closed by `closeAll` after each test, so any test runs alone or in any order.
 */
export function isolatedContexts(target: () => { browser: Browser; baseURL: string }) {
  const open: BrowserContext[] = [];
  return {
    async fresh(): Promise<BrowserContext> {
      const { browser, baseURL } = target();
      const context = await browser.newContext({ baseURL, viewport: { width: 1280, height: 900 } });
      open.push(context);
      return context;
    },
    async closeAll(): Promise<void> {
      for (const context of open.splice(0)) await context.close();
    },
  };
}
