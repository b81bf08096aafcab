import { S3Client } from '@aws-sdk/client-s3';
import { describe, expect, it } from 'vitest';
import { s3ClientConfig } from '../../blobs/fromConfig';
import { parseConfig } from '../../core/config';
import { isInfrastructureError, isQueryTimeout } from '../../core/failures';
import { createPool, poolTimeoutsFrom } from '../../db/pool';

/** D7: every call to Quire's own services is bounded by a validated setting. */
describe('bounds on calls to Quire infrastructure (D7)', () => {
  it('D7 the bounds have defaults and are validated, naming the setting', () => {
    const config = parseConfig({});
    expect(config).toMatchObject({
      QUIRE_DB_CONNECT_TIMEOUT_MS: 10_000,
      QUIRE_DB_QUERY_TIMEOUT_MS: 60_000,
      QUIRE_DB_KEEPALIVE_MS: 10_000,
      QUIRE_S3_CONNECT_TIMEOUT_MS: 10_000,
      QUIRE_S3_SOCKET_TIMEOUT_MS: 30_000,
      QUIRE_TEMPORAL_CONNECT_TIMEOUT_MS: 10_000,
    });
    for (const name of [
      'QUIRE_DB_CONNECT_TIMEOUT_MS',
      'QUIRE_DB_QUERY_TIMEOUT_MS',
      'QUIRE_S3_SOCKET_TIMEOUT_MS',
      'QUIRE_TEMPORAL_CONNECT_TIMEOUT_MS',
    ]) {
      expect(() => parseConfig({ [name]: '0' })).toThrow(new RegExp(name));
      expect(() => parseConfig({ [name]: 'soon' })).toThrow(new RegExp(name));
    }
  });

  it('D7 the PostgreSQL pool carries the bounds: connect, statement (client and server), keepalive', () => {
    const config = parseConfig({
      QUIRE_DB_CONNECT_TIMEOUT_MS: '1500',
      QUIRE_DB_QUERY_TIMEOUT_MS: '2500',
      QUIRE_DB_KEEPALIVE_MS: '3500',
    });
    const pool = createPool('postgres://nobody@127.0.0.1:1/none', 1, poolTimeoutsFrom(config));
    expect(pool.options).toMatchObject({
      connectionTimeoutMillis: 1500,
      query_timeout: 2500,
      statement_timeout: 2500,
      keepAlive: true,
      keepAliveInitialDelayMillis: 3500,
    });
    void pool.end();
  });

  it('D7 the object store client carries the bounds: connect, and a silent socket', async () => {
    const config = parseConfig({
      QUIRE_BLOB_STORE: 's3',
      QUIRE_S3_BUCKET: 'b',
      QUIRE_S3_ENDPOINT: 'http://127.0.0.1:9',
      QUIRE_S3_CONNECT_TIMEOUT_MS: '1200',
      QUIRE_S3_SOCKET_TIMEOUT_MS: '3400',
    });
    const handler = new S3Client(s3ClientConfig(config)).config.requestHandler as unknown as {
      configProvider: Promise<Record<string, unknown>>;
    };
    expect(await handler.configProvider).toMatchObject({
      connectionTimeout: 1200,
      socketTimeout: 3400,
    });
  });

  it('D7 a call that ran out of its bound is an outage, never the job fault', () => {
    const timedOut = new Error('Query read timeout');
    expect(isQueryTimeout(timedOut)).toBe(true);
    expect(isInfrastructureError(timedOut)).toBe(true);
    expect(isInfrastructureError(new Error('timeout exceeded when trying to connect'))).toBe(true);
    expect(
      isInfrastructureError(new Error('Connection terminated due to connection timeout')),
    ).toBe(true);
    expect(
      isInfrastructureError(
        Object.assign(new Error('canceling statement due to statement timeout'), {
          code: '57014',
        }),
      ),
    ).toBe(true);
    expect(isQueryTimeout(new Error('syntax error'))).toBe(false);
  });
});
