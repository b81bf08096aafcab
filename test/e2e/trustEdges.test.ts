import { request as httpRequest } from 'node:http';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI_ACTOR } from '../../core/actor';
import { hashPassword } from '../../core/passwords';
import { createAccount, putMember, removeMember, setAccountDisabled } from '../../db/accounts';
import { endSession } from '../../db/sessions';
import { apiKeyIdOf, createWorkspace } from '../../db/workspaces';
import { launchBrowser } from '../support/browser';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { temporalAddress } from '../support/quire';
import { buildWeb, removeWebBuild, startWeb, type WebProcess } from '../support/webServer';

/**
 * X3-X5 over HTTP against the real built console (`next start` on real PostgreSQL): what the
 * process answers before any route (undecodable paths), the policy on every console path and
 * the Origin rule wherever a server action can be posted, the client address behind trusted
 * proxies and the sign-in waits it keys, and streams that end when their credential does.
 * A browser is used once, to capture the sign-in form's own server-action request, which is
 * then replayed by hand with the addresses and passwords each test needs.
 */
let db: TestDatabase;
let distDir: string;
/** No trusted proxy: the socket's peer (127.0.0.1) is every client. */
let plain: WebProcess;
/** 127.0.0.1 is a trusted proxy: X-Forwarded-For names the client. */
let proxied: WebProcess;
let ws: number;
let wsKey: string;
let signInAction: { headers: Record<string, string>; body: Buffer };
const PASSWORD = 'correct horse battery staple';
let counter = 0;

async function person(): Promise<{ email: string; accountId: number }> {
  counter += 1;
  const email = `person-${counter}@trust-edges.test`;
  const account = await createAccount(db.pool, CLI_ACTOR, {
    email,
    name: `Person ${counter}`,
    passwordHash: await hashPassword(PASSWORD),
  });
  await putMember(db.pool, CLI_ACTOR, { workspaceId: ws, accountId: account.id, role: 'editor' });
  return { email, accountId: account.id };
}

/** The sign-in form's request, as the browser sends it (action id and field names included). */
async function captureSignIn(browser: Browser, base: string) {
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(`${base}/signin`);
  let captured: { headers: Record<string, string>; body: Buffer } | undefined;
  await page.route('**/signin', async (route) => {
    const request = route.request();
    if (request.method() !== 'POST') return route.continue();
    captured = { headers: await request.allHeaders(), body: request.postDataBuffer()! };
    await route.abort();
  });
  await page.getByLabel('Email').fill('someone@trust-edges.test');
  await page.getByLabel('Password').fill('not the password');
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  for (let waited = 0; captured === undefined && waited < 30_000; waited += 100) {
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  await context.close();
  if (!captured) throw new Error('the sign-in form sent no server action');
  return captured!;
}

type SignInOutcome = 'signed_in' | 'wrong' | 'wait';

/** Posts the captured sign-in action with these credentials, from this forwarded address. */
async function signIn(
  web: WebProcess,
  email: string,
  password: string,
  forwardedFor?: string,
): Promise<{ outcome: SignInOutcome; cookie?: string }> {
  const form = await new Response(new Uint8Array(signInAction.body), {
    headers: { 'content-type': signInAction.headers['content-type']! },
  }).formData();
  for (const name of [...form.keys()]) {
    if (name.endsWith('email')) form.set(name, email);
    if (name.endsWith('password')) form.set(name, password);
  }
  const headers: Record<string, string> = {
    'next-action': signInAction.headers['next-action']!,
    accept: 'text/x-component',
    origin: web.url,
  };
  if (forwardedFor) {
    headers['x-forwarded-for'] = forwardedFor;
    // The header the server writes for itself, forged too: it must be overwritten.
    headers['x-quire-client-address'] = forwardedFor.split(',')[0]!;
  }
  const response = await fetch(`${web.url}/signin`, {
    method: 'POST',
    headers,
    body: form,
    redirect: 'manual',
  });
  const text = await response.text();
  const session = response.headers.getSetCookie().find((c) => c.startsWith('quire_session='));
  if (session) return { outcome: 'signed_in', cookie: session.split(';')[0] };
  if (text.includes('Too many')) return { outcome: 'wait' };
  if (text.includes('not valid')) return { outcome: 'wrong' };
  throw new Error(`unexpected sign-in answer ${response.status}: ${text.slice(0, 300)}`);
}

/** A session for this person, signed in through the proxied replica from an address of its own
 * (so no test's sign-in limits touch another's); the session row serves either replica. */
async function sessionOf(email: string): Promise<string> {
  counter += 1;
  const { outcome, cookie } = await signIn(proxied, email, PASSWORD, `10.77.0.${counter}`);
  expect(outcome).toBe('signed_in');
  return cookie!;
}

async function failuresOf(email: string): Promise<string[]> {
  const { rows } = await db.pool.query(
    'SELECT DISTINCT address FROM sign_in_failures WHERE email = $1 ORDER BY address',
    [email],
  );
  return rows.map((r) => r.address);
}

/** A raw request: the path goes out exactly as written (fetch would re-encode it). */
function rawRequest(
  base: string,
  method: string,
  path: string,
  body?: string,
): Promise<{
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    const req = httpRequest({ hostname, port, method, path }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk) => {
        text += chunk;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text }));
    });
    req.on('error', reject);
    if (body !== undefined) {
      req.setHeader('content-type', 'application/json');
      req.write(body);
    }
    req.end();
  });
}

/** Reads an event stream until it ends; resolves with the ms it stayed open after `from()`. */
async function openStream(url: string, headers: Record<string, string>) {
  const response = await fetch(url, { headers });
  expect(response.status).toBe(200);
  const reader = response.body!.getReader();
  let text = '';
  let endedAt: number | undefined;
  const done = (async () => {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      text += new TextDecoder().decode(value);
    }
    endedAt = Date.now();
  })().catch(() => {
    endedAt = Date.now();
  });
  return {
    text: () => text,
    endedAt: () => endedAt,
    cancel: () => reader.cancel().catch(() => {}),
    done,
  };
}

beforeAll(async () => {
  db = await createTestDatabase();
  const created = await createWorkspace(db.pool, 'Trust edges');
  ws = created.workspace.id;
  wsKey = created.apiKey;
  distDir = await buildWeb();
  const env = {
    DATABASE_URL: db.url,
    TEMPORAL_ADDRESS: temporalAddress(),
    QUIRE_SECRET_KEY: 'quire-test-secret-key-0123456789-abcdefghij',
    QUIRE_SIGNIN_MAX_FAILURES_PER_ACCOUNT: '3',
    QUIRE_SIGNIN_MAX_FAILURES_PER_ADDRESS: '6',
    // Long enough that every try of a test falls inside the wait.
    QUIRE_SIGNIN_DELAY_MS: '120000',
    QUIRE_STREAM_RECHECK_MS: '1000',
    LOG_LEVEL: 'warn',
  };
  [plain, proxied] = await Promise.all([
    startWeb(distDir, env),
    startWeb(distDir, { ...env, QUIRE_TRUSTED_PROXIES: '127.0.0.1, ::1' }),
  ]);
  const browser = await launchBrowser();
  try {
    signInAction = await captureSignIn(browser, plain.url);
  } finally {
    await browser.close();
  }
}, 900_000);

afterAll(async () => {
  await plain?.stop();
  await proxied?.stop();
  if (distDir) removeWebBuild(distDir);
  await db?.drop();
});

/** 30 paths whose percent-encoding does not decode, across the API, IIIF and the console. */
const MALFORMED: Array<[string, string]> = [
  ['GET', '/api/v1/workspaces/1/items/%E0%A4%A'],
  ['GET', '/api/v1/workspaces/1/items/%E0%A4%A/pages'],
  ['DELETE', '/api/v1/workspaces/1/items/%FF'],
  ['POST', '/api/v1/workspaces/%FF/batches'],
  ['GET', '/api/v1/workspaces/1/pages/%C0%AF'],
  ['PATCH', '/api/v1/workspaces/1/pages/%C3'],
  ['GET', '/api/v1/workspaces/1/transcription-jobs/%ZZ'],
  ['POST', '/api/v1/workspaces/1/transcription-jobs/%E0%A4%A/cancel'],
  ['GET', '/api/v1/workspaces/1/webhooks/%'],
  ['GET', '/api/v1/workspaces/1/search/%ED%A0%80'],
  ['GET', '/api/v1/%E0%A4%A'],
  ['GET', '/api/v1/workspaces/1/items/ok%E0%A4%A?q=1'],
  ['GET', '/iiif/1/%E0%A4%A/manifest'],
  ['GET', '/iiif/%FF/item/manifest'],
  ['GET', '/iiif/1/item/canvas/%C3'],
  ['GET', '/iiif/1/image/%E0%A4%A/info.json'],
  ['GET', '/iiif/1/collection/%FE'],
  ['GET', '/items/%E0%A4%A'],
  ['GET', '/jobs/%FF'],
  ['GET', '/batches/%C3%28'],
  ['GET', '/review/%E0%A4%A'],
  ['GET', '/pages/%80'],
  ['GET', '/invite/%E0%A4%A'],
  ['POST', '/signin/%'],
  ['GET', '/%E0%A4%A'],
  ['GET', '/collections/%FF'],
  ['GET', '/console-api/live/%E0%A4%A'],
  ['GET', '/console-api/pages/%FF/media'],
  ['POST', '/console-api/batches/%E0%A4%A'],
  ['GET', '/console-api/%C3'],
];

describe('malformed input is a 400 with a code (X5)', () => {
  it('X5 thirty paths with bad percent-encoding (API, IIIF, console pages, console-api) answer 400 invalid_path as JSON with the security headers', async () => {
    expect(MALFORMED).toHaveLength(30);
    const answers = [];
    for (const [method, path] of MALFORMED) {
      const response = await rawRequest(
        plain.url,
        method,
        path,
        method === 'GET' ? undefined : '{}',
      );
      let code: string | undefined;
      try {
        code = JSON.parse(response.text).error.code;
      } catch {
        code = undefined;
      }
      answers.push({
        path,
        status: response.status,
        code,
        policy: String(response.headers['content-security-policy']).includes(
          "frame-ancestors 'none'",
        ),
      });
    }
    expect(answers).toEqual(
      MALFORMED.map(([, path]) => ({ path, status: 400, code: 'invalid_path', policy: true })),
    );
    // Logged by code, never with the path.
    expect(plain.output()).toContain('"code":"invalid_path"');
    expect(plain.output()).not.toContain('%E0%A4%A');
  }, 120_000);

  it("X5 404 answers on every kind of path carry a Content-Security-Policy with frame-ancestors 'none' and nosniff", async () => {
    for (const path of [
      '/no-such-page',
      '/healthz-not',
      '/readyz/more',
      '/api',
      '/api/v1/no-such-route',
      '/console-api/no-such-route',
      '/iiif/no-such-route',
      '/_next/static/no-such-file.js',
      '/_next/no-such-thing',
      '/favicon.ico',
    ]) {
      const response = await fetch(`${plain.url}${path}`, { redirect: 'manual' });
      expect(response.status, path).toBe(404);
      const policies = response.headers.get('content-security-policy');
      expect(policies, path).toContain("frame-ancestors 'none'");
      expect(response.headers.get('x-content-type-options'), path).toBe('nosniff');
    }
  }, 60_000);

  it('X5 a server action posted without Origin on paths outside the page matcher is 403 origin_mismatch and signs nobody out', async () => {
    const cookie = await sessionOf((await person()).email);
    // signOut's id, taken from the build: the action takes no arguments.
    const { readFileSync } = await import('node:fs');
    const { join } = await import('node:path');
    const manifest = JSON.parse(
      readFileSync(
        join(__dirname, '../../web', distDir, 'server/server-reference-manifest.json'),
        'utf8',
      ),
    ) as { node: Record<string, { exportedName?: string; filename?: string }> };
    const signOutId = Object.entries(manifest.node).find(
      ([, v]) => v.exportedName === 'signOut' && v.filename?.includes('signin/actions'),
    )?.[0];
    expect(signOutId).toBeTruthy();
    for (const path of [
      '/api/v1/no-such-route',
      '/console-api/no-such-route',
      '/iiif/no-such-route',
      '/healthz',
      '/_next/static/x',
    ]) {
      const response = await fetch(`${plain.url}${path}`, {
        method: 'POST',
        headers: {
          cookie,
          'next-action': signOutId!,
          'content-type': 'text/plain;charset=UTF-8',
          'sec-fetch-site': 'cross-site',
          accept: 'text/x-component',
        },
        body: '[]',
        redirect: 'manual',
      });
      expect(response.status, path).toBe(403);
      expect((await response.json()).error.code, path).toBe('origin_mismatch');
    }
    // The session still opens the console.
    const still = await fetch(`${plain.url}/jobs`, { headers: { cookie }, redirect: 'manual' });
    expect(still.status).toBe(200);
  }, 60_000);
});

describe('sign-in limits key on the address the server sees (X4)', () => {
  it('X4 with no trusted proxy a spoofed X-Forwarded-For neither resets an account limit nor spreads guesses over addresses', async () => {
    const { email } = await person();
    const outcomes: SignInOutcome[] = [];
    for (let i = 0; i < 5; i += 1) {
      outcomes.push((await signIn(plain, email, 'wrong password!', `198.51.100.${i}`)).outcome);
    }
    expect(outcomes).toEqual(['wrong', 'wrong', 'wrong', 'wait', 'wait']);
    // A fresh header does not reset the wait, not even for the right password.
    expect((await signIn(plain, email, PASSWORD, '203.0.113.77')).outcome).toBe('wait');
    // Every failure was counted against the connection's own address.
    expect(await failuresOf(email)).toEqual(['127.0.0.1']);
    // Guesses sprayed over accounts, each with its own forged address, meet the address limit.
    const sprayed: SignInOutcome[] = [];
    for (let i = 0; i < 8; i += 1) {
      const other = await person();
      sprayed.push((await signIn(plain, other.email, 'wrong password!', `192.0.2.${i}`)).outcome);
    }
    expect(sprayed.slice(-3)).toEqual(['wait', 'wait', 'wait']);
  }, 120_000);

  it('X4 behind a trusted proxy the owner signs in from their own address while another address guesses at the account', async () => {
    const owner = await person();
    const attacker = '203.0.113.9';
    const home = '198.51.100.7';
    const attack: SignInOutcome[] = [];
    for (let i = 0; i < 6; i += 1) {
      attack.push((await signIn(proxied, owner.email, `guess ${i}`, attacker)).outcome);
    }
    expect(attack).toEqual(['wrong', 'wrong', 'wrong', 'wait', 'wait', 'wait']);
    // The guesser is held off even when it holds the right password.
    expect((await signIn(proxied, owner.email, PASSWORD, attacker)).outcome).toBe('wait');
    // The server saw the two as distinct: every failure is the attacker's.
    expect(await failuresOf(owner.email)).toEqual([attacker]);
    // A client-chosen address left of the proxy's entry is not the one used.
    expect((await signIn(proxied, owner.email, PASSWORD, `${attacker}, ${home}`)).outcome).toBe(
      'signed_in',
    );
    expect((await signIn(proxied, owner.email, PASSWORD, home)).outcome).toBe('signed_in');
    // And the attacker's wait stands after the owner's sign-in.
    expect((await signIn(proxied, owner.email, PASSWORD, attacker)).outcome).toBe('wait');
  }, 120_000);

  it('X4 a QUIRE_TRUSTED_PROXIES entry that is neither an address nor a CIDR stops the web process at start', async () => {
    let started: WebProcess | undefined;
    let refusal: unknown;
    try {
      started = await startWeb(distDir, {
        DATABASE_URL: db.url,
        TEMPORAL_ADDRESS: temporalAddress(),
        QUIRE_SECRET_KEY: 'quire-test-secret-key-0123456789-abcdefghij',
        QUIRE_TRUSTED_PROXIES: '10.0.0.0/33',
      });
    } catch (error) {
      refusal = error;
    }
    await started?.stop();
    expect(String(refusal)).toMatch(/QUIRE_TRUSTED_PROXIES/);
  }, 90_000);
});

describe('streams end with their credential (X3)', () => {
  it("X3 a revoked key's open event stream ends within 5 s", async () => {
    const stream = await openStream(`${plain.url}/api/v1/workspaces/${ws}/events`, {
      authorization: `Bearer ${wsKey}`,
    });
    await expect.poll(() => stream.text(), { timeout: 10_000 }).toContain('stream.ready');
    const keyId = await apiKeyIdOf(db.pool, wsKey);
    await db.pool.query('UPDATE api_keys SET revoked_at = now() WHERE id = $1', [keyId]);
    const revokedAt = Date.now();
    await Promise.race([stream.done, new Promise((r) => setTimeout(r, 8_000))]);
    stream.cancel();
    expect(stream.endedAt()).toBeDefined();
    expect(stream.endedAt()! - revokedAt).toBeLessThan(5_000);
  }, 60_000);

  /** How a person's access ends, each as the console or an operator ends it. */
  const endings: Array<[string, (p: { accountId: number; cookie: string }) => Promise<unknown>]> = [
    [
      'a removed member',
      (p) => removeMember(db.pool, CLI_ACTOR, { workspaceId: ws, accountId: p.accountId }),
    ],
    ['an ended session', (p) => endSession(db.pool, p.cookie.split('=')[1]!)],
    ['a disabled account', (p) => setAccountDisabled(db.pool, CLI_ACTOR, p.accountId, true)],
  ];
  for (const [who, end] of endings) {
    it(`X3 ${who}'s live console stream and session-opened event stream end within 5 s`, async () => {
      const member = await person();
      const cookie = await sessionOf(member.email);
      const streams = await Promise.all([
        openStream(`${plain.url}/console-api/live?topics=jobs`, { cookie }),
        openStream(`${proxied.url}/api/v1/workspaces/${ws}/events`, { cookie }),
      ]);
      await expect.poll(() => streams[0]!.text(), { timeout: 10_000 }).toContain('event: jobs');
      await expect.poll(() => streams[1]!.text(), { timeout: 10_000 }).toContain('stream.ready');
      await end({ accountId: member.accountId, cookie });
      const endedAt = Date.now();
      await Promise.race([
        Promise.all(streams.map((s) => s.done)),
        new Promise((r) => setTimeout(r, 8_000)),
      ]);
      for (const stream of streams) {
        stream.cancel();
        expect(stream.endedAt()).toBeDefined();
        expect(stream.endedAt()! - endedAt).toBeLessThan(5_000);
      }
    }, 60_000);
  }
});
