import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordActionRefusal, refuseWithJson } from '../../web/lib/actionRefusal';

/**
 * R8 on a real node:http server: a handler that records a refusal and answers 403 the way
 * Next answers `forbidden()` in an action (a streamed component payload) has its answer
 * replaced by Quire's JSON; a 403 nobody recorded (proxy.ts's origin refusal) and any other
 * answer pass untouched.
 */
let server: http.Server;
let base: string;

beforeAll(async () => {
  server = http.createServer((request, response) => {
    refuseWithJson(response, async () => {
      await new Promise((r) => setTimeout(r, 5));
      if (request.url === '/refused')
        recordActionRefusal('the viewer role may not do page.publish');
      if (request.url === '/ok') {
        response.statusCode = 200;
        response.setHeader('content-type', 'text/x-component');
        response.end('0:{"a":1}\n');
        return;
      }
      response.statusCode = 403;
      response.setHeader('content-type', 'text/x-component');
      response.write('0:{"a":"$@1"}\n');
      response.end('1:E{"digest":"NEXT_HTTP_ERROR_FALLBACK;403"}\n');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
});

describe('R8 a refused server action answers JSON', () => {
  it('R8 a recorded refusal replaces the 403 payload with the code and its sentence as JSON', async () => {
    const refused = await fetch(`${base}/refused`, { method: 'POST' });
    expect(refused.status).toBe(403);
    expect(refused.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(await refused.json()).toEqual({
      error: { code: 'forbidden', message: 'the viewer role may not do page.publish' },
    });
    const unrecorded = await fetch(`${base}/other`, { method: 'POST' });
    expect(unrecorded.status).toBe(403);
    expect(unrecorded.headers.get('content-type')).toBe('text/x-component');
    const ok = await fetch(`${base}/ok`, { method: 'POST' });
    expect(ok.status).toBe(200);
    expect(await ok.text()).toBe('0:{"a":1}\n');
  });
});
