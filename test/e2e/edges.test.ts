import { request as httpRequest } from 'node:http';
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { createWorkspace } from '../../db/workspaces';
import { consoleStack } from '../support/consoleStack';
import { multipartBody, png, wav } from '../support/uploadFixtures';

/**
 * R6 over HTTP against the real built console (`next start`, real PostgreSQL and Temporal):
 * the Origin check in front of every state-changing console request, and the security
 * headers of pages, exports, API answers and IIIF responses. No worker runs: nothing here
 * needs a job to finish, only the rows an accepted request writes.
 */
const stack = consoleStack({
  quire: {},
  web: () => ({
    QUIRE_DEFAULT_PROVIDER: 'simulated',
    QUIRE_ENABLE_SIMULATED: '1',
    LOG_LEVEL: 'warn',
  }),
});

async function signedIn(): Promise<{ ws: number; key: string; cookie: string; page: Page }> {
  const { workspace, apiKey } = await createWorkspace(stack.quire.db.pool, 'Edges');
  const page = await stack.signedInWithKey(apiKey);
  const session = (await page.context().cookies()).find((c) => c.name === 'quire_session');
  if (!session) throw new Error('no session cookie after sign-in');
  return {
    ws: workspace.id,
    key: apiKey,
    cookie: `${session.name}=${session.value}`,
    page,
  };
}

async function rowsOf(ws: number): Promise<{ batches: number; pages: number; jobs: number }> {
  const { rows } = await stack.quire.db.pool.query(
    `SELECT (SELECT count(*)::int FROM batches WHERE workspace_id = $1) AS batches,
            (SELECT count(*)::int FROM pages WHERE workspace_id = $1) AS pages,
            (SELECT count(*)::int FROM transcription_jobs WHERE workspace_id = $1) AS jobs`,
    [ws],
  );
  return rows[0];
}

function uploadForm(itemId: string): FormData {
  const form = new FormData();
  form.append('itemId', itemId);
  form.append('files[]', new Blob([new Uint8Array(png(40, 30))], { type: 'image/png' }), 'p1.png');
  return form;
}

describe('the console checks where a change comes from (R6)', () => {
  it('R6 a console upload from another origin, another port of the same host or with no Origin is 403 origin_mismatch and creates no batch, page or job', async () => {
    const { ws, cookie } = await signedIn();
    const port = new URL(stack.web.url).port;
    const refusedHeaders: Array<Record<string, string>> = [
      { origin: 'http://evil.example' },
      // Same site, other port (the Temporal UI's): SameSite=Strict sends the cookie here.
      { origin: 'http://127.0.0.1:8233' },
      { origin: `https://127.0.0.1:${port}` },
      { origin: 'null' },
      {},
      { 'sec-fetch-site': 'same-site' },
      { 'sec-fetch-site': 'cross-site' },
    ];
    for (const extra of refusedHeaders) {
      const response = await fetch(`${stack.web.url}/console-api/batches`, {
        method: 'POST',
        headers: { cookie, ...extra },
        body: uploadForm('refused'),
      });
      expect(response.status, JSON.stringify(extra)).toBe(403);
      expect((await response.json()).error.code).toBe('origin_mismatch');
    }
    expect(await rowsOf(ws)).toEqual({ batches: 0, pages: 0, jobs: 0 });

    // The same request from the console's own origin goes in: the refusals above were the check.
    const accepted = await fetch(`${stack.web.url}/console-api/batches`, {
      method: 'POST',
      headers: { cookie, origin: stack.web.url },
      body: uploadForm('accepted'),
    });
    expect(accepted.status).toBe(201);
    expect(await rowsOf(ws)).toEqual({ batches: 1, pages: 1, jobs: 1 });
  }, 60_000);

  it('R6 a server action posted from another origin is 403 origin_mismatch and signs nobody in; from the console it signs in', async () => {
    const { workspace, apiKey } = await createWorkspace(stack.quire.db.pool, 'Edges sign-in');
    const context = await stack.newContext();
    const page = await context.newPage();
    await page.goto('/signin');
    // The browser's own server-action request, captured and held: it is replayed below.
    let captured: { headers: Record<string, string>; body: Buffer } | undefined;
    await page.route('**/signin', async (route) => {
      const request = route.request();
      if (request.method() !== 'POST') return route.continue();
      captured = { headers: await request.allHeaders(), body: request.postDataBuffer()! };
      await route.abort();
    });
    await page.getByLabel('Workspace API key').fill(apiKey);
    await page.getByRole('button', { name: 'Sign in with a key' }).click();
    await expect.poll(() => captured !== undefined).toBe(true);
    const { headers, body } = captured!;
    expect(headers['next-action']).toBeTruthy();
    expect(headers.origin).toBe(stack.web.url);
    const replay = (origin: string | undefined) => {
      const sent: Record<string, string> = {
        'content-type': headers['content-type']!,
        'next-action': headers['next-action']!,
        accept: headers.accept ?? 'text/x-component',
      };
      if (origin) sent.origin = origin;
      return fetch(`${stack.web.url}/signin`, {
        method: 'POST',
        headers: sent,
        body: new Uint8Array(body),
        redirect: 'manual',
      });
    };
    for (const origin of ['http://evil.example', 'http://127.0.0.1:8233', undefined]) {
      const refused = await replay(origin);
      expect(refused.status, String(origin)).toBe(403);
      expect((await refused.json()).error.code).toBe('origin_mismatch');
      expect(refused.headers.getSetCookie().join(';')).not.toContain('quire_session');
    }
    const accepted = await replay(stack.web.url);
    expect(accepted.headers.getSetCookie().join(';')).toContain('quire_session=');
    expect(workspace.id).toBeGreaterThan(0);
  }, 60_000);
});

describe('pages, exports and IIIF carry the security headers (R6)', () => {
  it("R6 console pages carry a nonce Content-Security-Policy with frame-ancestors 'none' and nosniff, and the console runs under it", async () => {
    const { ws, key, page } = await signedIn();
    // A job in the list, so the job table is drawn under the policy too.
    const upload = await fetch(`${stack.web.url}/api/v1/workspaces/${ws}/batches`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}` },
      body: uploadForm('under-policy'),
    });
    expect(upload.status).toBe(201);

    const signin = await fetch(`${stack.web.url}/signin`);
    const policy = signin.headers.get('content-security-policy') ?? '';
    const nonce = /'nonce-([A-Za-z0-9+/=]+)'/.exec(policy)?.[1];
    expect(nonce).toBeTruthy();
    expect(policy).toContain("frame-ancestors 'none'");
    expect(policy).toContain("object-src 'none'");
    expect(policy).not.toContain('unsafe-inline');
    expect(policy).not.toContain('unsafe-eval');
    expect(signin.headers.get('x-content-type-options')).toBe('nosniff');
    const html = await signin.text();
    const scripts = [...html.matchAll(/<script\b[^>]*>/g)].map((m) => m[0]);
    expect(scripts.length).toBeGreaterThan(0);
    for (const tag of scripts) expect(tag).toContain(`nonce="${nonce}"`);
    // A fresh nonce per response.
    const again = (await fetch(`${stack.web.url}/signin`)).headers.get('content-security-policy');
    expect(again).not.toBe(policy);

    // In the browser: no violation on the pages, and React runs (the job list hydrates).
    await page.addInitScript(() => {
      const seen: string[] = [];
      (window as unknown as { violations: string[] }).violations = seen;
      document.addEventListener('securitypolicyviolation', (event) =>
        seen.push(`${event.violatedDirective} ${event.blockedURI}`),
      );
    });
    for (const path of [
      '/',
      '/jobs',
      '/batches',
      '/upload',
      '/webhooks',
      '/providers',
      '/audit',
      '/search',
    ]) {
      const response = await page.goto(path);
      expect(response?.headers()['content-security-policy']).toContain("frame-ancestors 'none'");
      await page.waitForLoadState('networkidle');
      expect(
        await page.evaluate(() => (window as unknown as { violations: string[] }).violations),
        path,
      ).toEqual([]);
      expect(
        await page.evaluate(() =>
          Array.isArray((self as unknown as { __next_f: unknown }).__next_f),
        ),
        path,
      ).toBe(true);
    }
  }, 90_000);

  it("R6 exports, API answers and IIIF responses carry nosniff and frame-ancestors 'none'; IIIF keeps its CORS", async () => {
    const { ws, key, cookie } = await signedIn();
    const upload = await fetch(`${stack.web.url}/api/v1/workspaces/${ws}/batches`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}` },
      body: uploadForm('exported'),
    });
    expect(upload.status).toBe(201);
    const pageId = (await upload.json()).pages[0].pageId as number;
    const bearer = { authorization: `Bearer ${key}` };
    const checks: Array<{ path: string; headers: Record<string, string>; cors?: boolean }> = [
      { path: `/api/v1/workspaces/${ws}/pages/${pageId}/export?format=alto`, headers: bearer },
      { path: `/api/v1/workspaces/${ws}/pages/${pageId}`, headers: bearer },
      { path: `/console-api/pages/${pageId}/export?format=text`, headers: { cookie } },
      { path: `/console-api/pages/${pageId}/export?format=iiif`, headers: { cookie } },
      {
        path: `/iiif/${ws}/exported/manifest`,
        headers: { ...bearer, origin: 'https://viewer.example' },
        cors: true,
      },
      { path: '/api/v1/openapi.json', headers: {} },
    ];
    for (const check of checks) {
      const response = await fetch(`${stack.web.url}${check.path}`, { headers: check.headers });
      expect(response.status, check.path).toBe(200);
      expect(response.headers.get('x-content-type-options'), check.path).toBe('nosniff');
      const policy = response.headers.get('content-security-policy') ?? '';
      expect(policy, check.path).toContain("frame-ancestors 'none'");
      expect(policy, check.path).toContain("default-src 'none'");
      if (check.cors) expect(response.headers.get('access-control-allow-origin')).toBe('*');
    }
    // A refusal carries them too.
    const missing = await fetch(`${stack.web.url}/api/v1/workspaces/${ws}/pages/999999999`, {
      headers: bearer,
    });
    expect(missing.status).toBe(404);
    expect(missing.headers.get('x-content-type-options')).toBe('nosniff');
    expect(missing.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
  }, 60_000);
});

/** Sends a body over a raw connection; resolves once the answer is read and every byte sent. */
function send(
  path: string,
  headers: Record<string, string>,
  body: Buffer,
  method = 'POST',
  chunked = false,
): Promise<{ status: number; body: string }> {
  const url = new URL(path, stack.web.url);
  return new Promise((resolve, reject) => {
    let sent = false;
    let answer: { status: number; body: string } | undefined;
    const done = () => {
      if (sent && answer) resolve(answer);
    };
    const req = httpRequest(
      url,
      {
        method,
        headers: chunked ? headers : { ...headers, 'content-length': String(body.length) },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk) => {
          text += chunk;
        });
        res.on('end', () => {
          answer = { status: res.statusCode ?? 0, body: text };
          done();
        });
      },
    );
    req.on('error', reject);
    req.on('finish', () => {
      sent = true;
      done();
    });
    // Written in pieces, as a browser uploads: the refusal comes while bytes are still arriving.
    let offset = 0;
    const next = () => {
      while (offset < body.length) {
        const piece = body.subarray(offset, offset + 64 * 1024);
        offset += piece.length;
        if (!req.write(piece)) {
          req.once('drain', next);
          return;
        }
      }
      req.end();
    };
    next();
  });
}

describe('a refused request body is never cancelled under the sender (R6)', () => {
  it('R6 an upload refused while a large transcript is still arriving, and a JSON body over its limit, log no uncaughtException', async () => {
    const { workspace, apiKey } = await createWorkspace(stack.quire.db.pool, 'Edges streams');
    const boundary = '----quire-test-boundary-7c1d';
    const bigTranscript = Buffer.from(
      `<?xml version="1.0"?><PcGts xmlns="http://schema.primaresearch.org/PAGE/gts/pagecontent/2019-07-15"><!--${'x'.repeat(1024 * 1024)}--></PcGts>`,
    );
    const refusedFirst = multipartBody([
      {
        name: 'files[]',
        value: Buffer.from('this is text pretending to be a PNG image'),
        filename: 'fake.png',
      },
      { name: 'transcript', value: bigTranscript, filename: 'big.xml' },
    ]);
    const refusedTranscript = multipartBody([
      { name: 'files[]', value: png(40, 30), filename: 'p.png' },
      { name: 'transcript', value: bigTranscript, filename: 'big.xml' },
      { name: 'files[]', value: png(40, 30), filename: 'q.png' },
    ]);
    const headers = {
      authorization: `Bearer ${apiKey}`,
      'content-type': `multipart/form-data; boundary=${boundary}`,
    };
    const before = stack.web.output().length;
    const answers: Array<number | string> = [];
    const attempt = (sent: Promise<{ status: number }>) =>
      sent.then(
        (a) => answers.push(a.status),
        (error: Error) => answers.push(error.message),
      );
    const big = Buffer.from(JSON.stringify({ segments: [], pad: 'x'.repeat(6 * 1024 * 1024) }));
    for (let i = 0; i < 4; i++) {
      await attempt(send(`/api/v1/workspaces/${workspace.id}/batches`, headers, refusedFirst));
      await attempt(send(`/api/v1/workspaces/${workspace.id}/batches`, headers, refusedTranscript));
      // A page edit's body over its 5 MB limit, chunked: no length to refuse it on up front.
      await attempt(
        send(
          `/api/v1/workspaces/${workspace.id}/pages/1`,
          {
            authorization: `Bearer ${apiKey}`,
            'content-type': 'application/json',
            'if-match': '"0"',
          },
          big,
          'PUT',
          true,
        ),
      );
    }
    // Every byte was sent and answered; the server still answers, and said nothing uncaught.
    expect((await fetch(`${stack.web.url}/healthz`)).status).toBe(200);
    const log = stack.web.output().slice(before);
    expect(log).not.toContain('uncaughtException');
    expect(log).not.toContain('already closed');
    expect(answers).toEqual(Array.from({ length: 4 }, () => [415, 422, 413]).flat());
    expect(await rowsOf(workspace.id)).toEqual({ batches: 0, pages: 0, jobs: 0 });
  }, 120_000);

  it('R6 an upload beyond the 10 MB a request proxy would buffer reaches the ingest whole, by key and from the console', async () => {
    const { ws, key, cookie } = await signedIn();
    const recording = wav(800_000); // 12.8 MB
    const body = multipartBody([{ name: 'files[]', value: recording, filename: 'long.wav' }]);
    const type = 'multipart/form-data; boundary=----quire-test-boundary-7c1d';
    const byKey = await send(
      `/api/v1/workspaces/${ws}/batches`,
      { authorization: `Bearer ${key}`, 'content-type': type },
      body,
    );
    expect(byKey.status).toBe(201);
    const fromConsole = await send(
      '/console-api/batches',
      { cookie, origin: stack.web.url, 'content-type': type },
      body,
    );
    expect(fromConsole.status).toBe(201);
    const { rows } = await stack.quire.db.pool.query(
      `SELECT b.size_bytes::int AS size FROM pages p JOIN blobs b ON b.key = p.blob_key
        WHERE p.workspace_id = $1`,
      [ws],
    );
    expect(rows.map((r) => r.size)).toEqual([recording.length, recording.length]);
  }, 120_000);
});
