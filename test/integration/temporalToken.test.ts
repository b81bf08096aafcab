import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTemporalToken, TemporalTokenError } from '../../net/temporalToken';
import { type IdentityProvider, startIdentityProvider } from '../../scripts/lib/identityProvider';
import { freePort } from '../../scripts/lib/temporal';
import { adminQuery, databaseUrl } from '../support/db';
import { eventually } from '../support/wait';

/**
 * R4: Quire's processes reach a frontend that checks JWTs with a token of their own client,
 * from a real provider (Ory Hydra with Quire's development login app and token hook): the
 * token carries the permissions Temporal's claim mapper reads, at the top level, signed by a
 * key the provider publishes, and is replaced before it expires.
 */
let idp: IdentityProvider;
const hydraDb = `quire_token_${process.pid}_${Date.now()}`;

const claimsOf = (jwt: string) =>
  JSON.parse(Buffer.from(jwt.split('.')[1] ?? '', 'base64url').toString()) as Record<
    string,
    unknown
  >;
const headerOf = (jwt: string) =>
  JSON.parse(Buffer.from(jwt.split('.')[0] ?? '', 'base64url').toString()) as { kid?: string };

beforeAll(async () => {
  await adminQuery(`CREATE DATABASE ${hydraDb}`);
  const dsn = new URL(databaseUrl(hydraDb));
  dsn.searchParams.set('sslmode', 'disable');
  idp = await startIdentityProvider({
    dsn: dsn.toString(),
    publicPort: await freePort(),
    people: [],
    logFile: join(mkdtempSync(join(tmpdir(), 'quire-hydra-')), 'hydra.log'),
    // Short-lived tokens, so a refresh happens within the test.
    accessTokenLifespan: '9s',
  });
}, 180_000);

afterAll(async () => {
  await idp?.stop();
  await adminQuery(`DROP DATABASE IF EXISTS ${hydraDb} WITH (FORCE)`);
});

describe('the Temporal token of Quire’s own client (R4)', () => {
  it('R4 a service client gets a JWT with its Temporal permissions at the top level, signed by a published key, refreshed before it expires', async () => {
    const client = await idp.registerServiceClient({ permissions: ['default:write'] });
    const token = await startTemporalToken({
      TEMPORAL_OAUTH_TOKEN_URL: idp.tokenUrl,
      TEMPORAL_OAUTH_CLIENT_ID: client.clientId,
      TEMPORAL_OAUTH_CLIENT_SECRET: client.clientSecret,
    });
    expect(token).toBeDefined();
    const first = token!.current();
    const claims = claimsOf(first);
    expect(claims.permissions).toEqual(['default:write']);
    expect(claims.sub).toBe(client.clientId);
    const keys = (await (await fetch(idp.jwksUrl)).json()) as {
      keys: Array<{ kid: string; alg?: string }>;
    };
    expect(keys.keys.map((k) => k.kid)).toContain(headerOf(first).kid);

    // 9 s tokens are replaced at two thirds of their life, before any call could carry an
    // expired one.
    const refreshed: string[] = [];
    token!.onRefresh((fresh) => refreshed.push(fresh));
    await eventually(async () => (refreshed.length > 0 ? true : undefined), 20_000, 200);
    expect(token!.current()).toBe(refreshed[0]);
    expect(token!.current()).not.toBe(first);
    expect(Number(claimsOf(first).exp) * 1000).toBeGreaterThan(Date.now() - 1_000);
    token!.close();
  }, 60_000);

  it('R4 a client the provider refuses stops the start with a stable code and never shows the secret', async () => {
    const client = await idp.registerServiceClient({ permissions: ['default:write'] });
    const refused = startTemporalToken({
      TEMPORAL_OAUTH_TOKEN_URL: idp.tokenUrl,
      TEMPORAL_OAUTH_CLIENT_ID: client.clientId,
      TEMPORAL_OAUTH_CLIENT_SECRET: 'not-the-secret-0123456789',
    });
    await expect(refused).rejects.toBeInstanceOf(TemporalTokenError);
    const error = await refused.catch((e: TemporalTokenError) => e);
    expect((error as TemporalTokenError).code).toBe('temporal_token_refused');
    expect(String((error as Error).message)).not.toContain('not-the-secret');
  });

  it('R4 without a configured client no token is fetched and the frontend is reached as before', async () => {
    expect(await startTemporalToken({})).toBeUndefined();
  });
});
