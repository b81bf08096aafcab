import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, expect } from 'vitest';
import { auditInvariants } from '../../db/audit';
import type { ProviderRegistry } from '../../providers/registry';
import type { QuireWorker } from '../../worker/createWorker';
import { isolatedContexts, launchBrowser } from './browser';
import { createTestDatabase, type TestDatabase } from './db';
import { createTestQuire, type TestQuire, temporalAddress } from './quire';
import { buildWeb, removeWebBuild, startWeb, type WebProcess } from './webServer';

/**
 * The real stack a console test runs against, set up once per file: a Quire under test (its
 * database, task queue and blob store; a worker when asked) or a bare database, the console
 * built once and served by `next start`, and Debian's Chromium. `consoleStack` registers the
 * file's hooks; the fields of what it returns are ready inside tests.
 *
 * Set-up runs in this order: the Quire or database, the worker, `beforeWeb`, the console, the
 * browser. Teardown: each test's browser contexts (then the invariant audit, when asked) after
 * each test; after all of them the browser, the console and its build, the worker,
 * `beforeClose`, then the Quire or database. Hooks a file registers before calling this wrap the
 * stack (vitest runs after-hooks in reverse): set up before it, torn down after it.
 */

/** The console's session key where a test has only a database (no Quire config to take it from). */
export const CONSOLE_SECRET_KEY = 'quire-test-secret-key-0123456789-abcdefghij';

export interface ConsoleStackOptions {
  /**
   * A Quire under test (createTestQuire) with these config overrides and engines; without it
   * the console runs on a bare test database. The config may be a function, read at set-up
   * (when it names something a hook of the file's own made first).
   */
  quire?: {
    config?: Record<string, string> | (() => Record<string, string>);
    providers?: ProviderRegistry;
  };
  /** The identity of a worker run on the Quire's task queue; none when omitted. */
  worker?: string;
  /**
   * The console's environment beyond what the stack gives it (DATABASE_URL, TEMPORAL_ADDRESS and
   * QUIRE_SECRET_KEY; with a Quire also QUIRE_TASK_QUEUE and QUIRE_BLOB_DIR, its blob store),
   * read once `beforeWeb` has run. A value given here wins.
   */
  web: (stack: ConsoleStack) => Record<string, string>;
  /** With a Quire: false when the console is to keep its own default blob directory. */
  blobDir?: boolean;
  /** False for a file that only speaks HTTP to the console. */
  browser?: boolean;
  /** With a Quire: after each test, the invariant auditor finds nothing. */
  auditAfterEach?: boolean;
  /** What the console must find when it starts (rows, files, other servers). */
  beforeWeb?: (stack: ConsoleStack) => Promise<void>;
  /** What goes once the browser, console and worker are stopped, before the database does. */
  beforeClose?: () => Promise<void>;
  /** The set-up hook's timeout (a first `next build` takes minutes on a loaded machine). */
  timeout?: number;
}

export interface ConsoleStack {
  /** The Quire under test (only with the `quire` option). */
  readonly quire: TestQuire;
  readonly db: TestDatabase;
  readonly web: WebProcess;
  readonly browser: Browser;
  /** A browser context of the test's own (closed after the test), at the console's URL. */
  newContext(): Promise<BrowserContext>;
  /** A page in a fresh context, signed in with a workspace API key or an operator key. */
  signedInWithKey(key: string, landing?: string): Promise<Page>;
  /** A page in a fresh context that carries a session cookie (`quire_session=...`). */
  withSessionCookie(cookie: string): Promise<Page>;
}

export function consoleStack(options: ConsoleStackOptions): ConsoleStack {
  let quire: TestQuire | undefined;
  let db: TestDatabase | undefined;
  let worker: QuireWorker | undefined;
  let running: Promise<void> | undefined;
  let distDir: string | undefined;
  let web: WebProcess | undefined;
  let browser: Browser | undefined;
  const ready = <T>(value: T | undefined, name: string): T => {
    if (value === undefined) throw new Error(`the console stack has no ${name} here`);
    return value;
  };
  const contexts = isolatedContexts(() => ({
    browser: ready(browser, 'browser'),
    baseURL: ready(web, 'console').url,
  }));

  const stack: ConsoleStack = {
    get quire() {
      return ready(quire, 'Quire');
    },
    get db() {
      return ready(db, 'database');
    },
    get web() {
      return ready(web, 'console');
    },
    get browser() {
      return ready(browser, 'browser');
    },
    newContext: () => contexts.fresh(),
    async signedInWithKey(key, landing = '/') {
      const page = await (await contexts.fresh()).newPage();
      await signInWithKey(page, key, landing);
      return page;
    },
    async withSessionCookie(cookie) {
      const context = await contexts.fresh();
      const [name, value] = cookie.split('=');
      await context.addCookies([{ name: name!, value: value!, url: stack.web.url }]);
      return context.newPage();
    },
  };

  beforeAll(async () => {
    if (options.quire) {
      const { config, providers } = options.quire;
      quire = await createTestQuire(typeof config === 'function' ? config() : config, providers);
      db = quire.db;
    } else {
      db = await createTestDatabase();
    }
    if (options.worker) {
      worker = await stack.quire.newWorker(options.worker);
      running = worker.run();
    }
    await options.beforeWeb?.(stack);
    distDir = await buildWeb();
    web = await startWeb(distDir, { ...baseEnv(quire, db, options), ...options.web(stack) });
    if (options.browser !== false) browser = await launchBrowser();
  }, options.timeout ?? 300_000);

  afterEach(async () => {
    await contexts.closeAll();
    if (options.auditAfterEach) expect(await auditInvariants(stack.quire.db.pool)).toEqual([]);
  });

  afterAll(async () => {
    await browser?.close();
    await web?.stop();
    if (distDir) removeWebBuild(distDir);
    worker?.shutdown();
    await running;
    await options.beforeClose?.();
    if (quire) await quire.close();
    else await db?.drop();
  });

  return stack;
}

function baseEnv(
  quire: TestQuire | undefined,
  db: TestDatabase,
  options: ConsoleStackOptions,
): Record<string, string> {
  if (!quire)
    return {
      DATABASE_URL: db.url,
      TEMPORAL_ADDRESS: temporalAddress(),
      QUIRE_SECRET_KEY: CONSOLE_SECRET_KEY,
    };
  return {
    DATABASE_URL: quire.db.url,
    TEMPORAL_ADDRESS: temporalAddress(),
    QUIRE_TASK_QUEUE: quire.config.QUIRE_TASK_QUEUE,
    QUIRE_SECRET_KEY: quire.config.QUIRE_SECRET_KEY,
    ...(options.blobDir === false
      ? {}
      : { QUIRE_BLOB_DIR: (quire.blobStore as unknown as { root: string }).root }),
  };
}

/** The sign-in page's key form: a workspace API key (lands on `/`) or an operator key. */
export async function signInWithKey(page: Page, key: string, landing = '/'): Promise<void> {
  await page.goto('/signin');
  await page.getByLabel('Workspace API key').fill(key);
  await page.getByRole('button', { name: 'Sign in with a key' }).click();
  await page.waitForURL((url) => url.pathname === landing);
}

/** The sign-in page's password form. */
export async function signInWithPassword(
  page: Page,
  email: string,
  password: string,
  landing: string,
  waitMs?: number,
): Promise<void> {
  await page.goto('/signin');
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await page.waitForURL(
    (url) => url.pathname === landing,
    waitMs === undefined ? undefined : { timeout: waitMs },
  );
}
