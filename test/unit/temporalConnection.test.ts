import { createServer, type IncomingHttpHeaders } from 'node:http2';
import type { AddressInfo } from 'node:net';
import { NativeConnection, type NativeConnectionOptions } from '@temporalio/worker';
import { describe, expect, it } from 'vitest';
import { type ConfigFiles, parseConfig } from '../../core/config';
import { temporalConnectionOptions, workerConnectionOptions } from '../../core/temporalConnection';

const KEY = 'k'.repeat(64);
const files: ConfigFiles = {
  readFile: (path) => (path.startsWith('/certs/') ? `PEM of ${path}` : undefined),
};
const options = (env: Record<string, string>) =>
  temporalConnectionOptions(parseConfig({ QUIRE_SECRET_KEY: KEY, ...env }), files);

describe('how Quire connects to Temporal (D2)', () => {
  it('D2 with nothing set: the address alone, no TLS, no API key', () => {
    expect(options({ TEMPORAL_ADDRESS: 'temporal:7233' })).toEqual({ address: 'temporal:7233' });
  });

  it('D2 an API key implies TLS with the system roots, as Temporal Cloud needs', () => {
    expect(options({ TEMPORAL_API_KEY: ' tk_abc ' })).toEqual({
      address: '127.0.0.1:7233',
      tls: {},
      apiKey: 'tk_abc',
    });
    expect(options({ TEMPORAL_TLS: 'true' }).tls).toEqual({});
  });

  it('D2 mTLS: the client pair, the server CA and the server name are read from their files', () => {
    const tls =
      options({
        TEMPORAL_TLS_CLIENT_CERT_PATH: '/certs/client.pem',
        TEMPORAL_TLS_CLIENT_KEY_PATH: '/certs/client.key',
        TEMPORAL_TLS_SERVER_CA_CERT_PATH: '/certs/ca.pem',
        TEMPORAL_TLS_SERVER_NAME: 'temporal.internal',
      }).tls || undefined;
    expect(tls?.serverNameOverride).toBe('temporal.internal');
    expect(Buffer.from(tls?.serverRootCACertificate ?? []).toString()).toBe('PEM of /certs/ca.pem');
    expect(Buffer.from(tls?.clientCertPair?.crt ?? []).toString()).toBe('PEM of /certs/client.pem');
    expect(Buffer.from(tls?.clientCertPair?.key ?? []).toString()).toBe('PEM of /certs/client.key');
  });

  it('D2 a certificate without its key, an unreadable file, or TLS switched off against TLS settings is refused, naming the variable', () => {
    expect(() => options({ TEMPORAL_TLS_CLIENT_CERT_PATH: '/certs/client.pem' })).toThrow(
      /TEMPORAL_TLS_CLIENT_CERT_PATH and TEMPORAL_TLS_CLIENT_KEY_PATH are set together/,
    );
    expect(() => options({ TEMPORAL_TLS_SERVER_CA_CERT_PATH: '/elsewhere/ca.pem' })).toThrow(
      'TEMPORAL_TLS_SERVER_CA_CERT_PATH: cannot read /elsewhere/ca.pem',
    );
    expect(() =>
      options({ TEMPORAL_TLS: 'false', TEMPORAL_TLS_SERVER_CA_CERT_PATH: '/certs/ca.pem' }),
    ).toThrow(/TEMPORAL_TLS=false contradicts/);
    expect(() => options({ TEMPORAL_TLS: 'yes' })).toThrow(/TEMPORAL_TLS/);
  });

  const OAUTH = {
    TEMPORAL_OAUTH_TOKEN_URL: 'http://idp.internal/oauth2/token',
    TEMPORAL_OAUTH_CLIENT_ID: 'quire-services',
    TEMPORAL_OAUTH_CLIENT_SECRET: 'secret',
  };

  it('R4 a client-credentials client keeps the connection plaintext unless TLS is asked for, and carries no static key', () => {
    // The token itself is added per call by net/temporalClient.ts; the SDK would otherwise turn
    // TLS on for any bearer token, and a loopback or private-network frontend has none.
    expect(options(OAUTH)).toEqual({ address: '127.0.0.1:7233', tls: false });
    expect(options({ ...OAUTH, TEMPORAL_TLS: 'true' }).tls).toEqual({});
  });

  it('R4 the client-credentials settings come together, and never beside an API key', () => {
    const { TEMPORAL_OAUTH_CLIENT_SECRET: _secret, ...partial } = OAUTH;
    expect(() => options(partial)).toThrow(
      /TEMPORAL_OAUTH_TOKEN_URL, TEMPORAL_OAUTH_CLIENT_ID and TEMPORAL_OAUTH_CLIENT_SECRET are set together/,
    );
    expect(() => options({ ...OAUTH, TEMPORAL_API_KEY: 'tk_abc' })).toThrow(
      /TEMPORAL_API_KEY and TEMPORAL_OAUTH_\* both/,
    );
  });
});

/**
 * What the worker's native connection sends a gRPC server: the headers and the first
 * message's compressed flag of the connection's first call, read by a plain HTTP/2 server
 * that answers every call UNIMPLEMENTED.
 */
async function firstCallOf(
  options: (address: string) => NativeConnectionOptions,
): Promise<{ headers: IncomingHttpHeaders; compressedFlag: number }> {
  const calls: Array<{ headers: IncomingHttpHeaders; compressedFlag: number }> = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      calls.push({ headers: request.headers, compressedFlag: Buffer.concat(chunks)[0] ?? -1 });
      response.writeHead(200, { 'content-type': 'application/grpc', 'grpc-status': '12' });
      response.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  try {
    const connection = await NativeConnection.connect(options(`127.0.0.1:${port}`)).catch(
      () => undefined,
    );
    await connection?.close();
    expect(calls.length).toBeGreaterThan(0);
    return calls[0]!;
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
}

describe("the worker's connection to Temporal (P6)", () => {
  it("P6 the worker's native connection sends its requests uncompressed; the SDK's default would gzip them", async () => {
    const worker = await firstCallOf((address) =>
      workerConnectionOptions(parseConfig({ QUIRE_SECRET_KEY: KEY, TEMPORAL_ADDRESS: address })),
    );
    expect(worker.headers['content-type']).toMatch(/^application\/grpc/);
    expect(worker.headers['grpc-encoding'] ?? 'identity').toBe('identity');
    expect(worker.compressedFlag).toBe(0);
    // The same call with the SDK's defaults: what the worker no longer pays for.
    const sdkDefault = await firstCallOf((address) => ({ address }));
    expect(sdkDefault.headers['grpc-encoding']).toBe('gzip');
    expect(sdkDefault.compressedFlag).toBe(1);
  });

  it('P6 the worker keeps the settings every process shares, and its token when it has one', () => {
    const config = parseConfig({ QUIRE_SECRET_KEY: KEY, TEMPORAL_API_KEY: 'tk_abc' });
    expect(workerConnectionOptions(config)).toEqual({
      ...temporalConnectionOptions(config),
      grpcCompression: { codec: 'none' },
    });
    expect(workerConnectionOptions(config, 'fresh-token').apiKey).toBe('fresh-token');
  });
});
