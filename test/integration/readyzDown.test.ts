import { createServer } from 'node:net';
import { beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../core/config';
import { configureWeb } from '../../web/lib/server';
import { ADMIN_URL } from '../support/db';

/** /readyz names the part that does not answer (its own file: the web's handles are made once). */
beforeAll(async () => {
  // A port nothing listens on: reserve one, then close it.
  const port = await new Promise<number>((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 1));
    });
  });
  configureWeb(parseConfig({ DATABASE_URL: ADMIN_URL, TEMPORAL_ADDRESS: `127.0.0.1:${port}` }));
});

describe('readiness', () => {
  it('/readyz is 503 and names temporal when Temporal does not answer; postgres still ok', async () => {
    const ready = await import('../../web/app/readyz/route');
    const response = await ready.GET();
    expect(response.status).toBe(503);
    const body = await response.json();
    expect(body.status).toBe('unavailable');
    expect(body.checks.postgres).toBe('ok');
    expect(body.checks.temporal).toMatch(/^unavailable/);
  });
});
