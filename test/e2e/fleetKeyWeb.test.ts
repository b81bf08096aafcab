import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { buildWeb, removeWebBuild, startWeb, type WebProcess } from '../support/webServer';

/**
 * D1 for web replicas: the production build started with the installation's key serves and
 * is ready; one started with another key exits at start with a message naming the variable.
 */
let db: TestDatabase;
let distDir: string;
const webs: WebProcess[] = [];

beforeAll(async () => {
  db = await createTestDatabase();
  distDir = await buildWeb();
}, 900_000);

afterAll(async () => {
  for (const web of webs) await web.stop();
  if (distDir) removeWebBuild(distDir);
  await db?.drop();
});

describe('one fleet configuration for web replicas (D1)', () => {
  it('D1 two web replicas with one key start and are ready; a third with another key refuses to start', async () => {
    const key = randomBytes(32).toString('hex');
    const env = {
      DATABASE_URL: db.url,
      QUIRE_SECRET_KEY: key,
      TEMPORAL_ADDRESS: process.env.QUIRE_TEST_TEMPORAL_ADDRESS ?? '127.0.0.1:7233',
      LOG_LEVEL: 'warn',
    };
    const replicas = await Promise.all([startWeb(distDir, env), startWeb(distDir, env)]);
    webs.push(...replicas);
    for (const web of replicas) {
      const ready = await fetch(`${web.url}/readyz`);
      expect(ready.status).toBe(200);
      expect((await ready.json()).checks.secretKey).toBe('ok');
    }
    const refused = await startWeb(distDir, {
      ...env,
      QUIRE_SECRET_KEY: randomBytes(32).toString('hex'),
    }).then(
      (web) => {
        webs.push(web);
        return web.output();
      },
      (error: Error) => error.message,
    );
    expect(refused).toMatch(/next start exited/);
    expect(refused).toMatch(
      /QUIRE_SECRET_KEY \(fingerprint [0-9a-f]{12}\) is not this installation's key/,
    );
  });
});
