import type { TLSConfig } from '@temporalio/client';
import type { NativeConnectionOptions } from '@temporalio/worker';
import { ConfigError, type ConfigFiles, configFiles, type QuireConfig } from './config';

/**
 * How every Quire process reaches Temporal (D2): the worker's native connection, the typed
 * client of the worker, the web replicas and the admin CLI all connect with these options, so
 * a fleet pointed at Temporal Cloud or an mTLS cluster is configured once, by the variables
 * Temporal's own tools read (`TEMPORAL_API_KEY`, `TEMPORAL_TLS_*`).
 */
export interface TemporalConnectionOptions {
  address: string;
  /** `false`: plaintext even though a token is sent (the SDK would otherwise turn TLS on). */
  tls?: TLSConfig | false;
  apiKey?: string;
}

export function temporalConnectionOptions(
  config: QuireConfig,
  files: ConfigFiles = configFiles,
): TemporalConnectionOptions {
  const read = (variable: string, path: string | undefined): Buffer | undefined => {
    if (path === undefined) return undefined;
    const content = files.readFile(path);
    // The path is named, the content never is (it may be a private key).
    if (content === undefined) throw new ConfigError(`${variable}: cannot read ${path}`);
    return Buffer.from(content);
  };
  const crt = read('TEMPORAL_TLS_CLIENT_CERT_PATH', config.TEMPORAL_TLS_CLIENT_CERT_PATH);
  const key = read('TEMPORAL_TLS_CLIENT_KEY_PATH', config.TEMPORAL_TLS_CLIENT_KEY_PATH);
  const ca = read('TEMPORAL_TLS_SERVER_CA_CERT_PATH', config.TEMPORAL_TLS_SERVER_CA_CERT_PATH);
  const serverName = config.TEMPORAL_TLS_SERVER_NAME;
  const implied = Boolean(crt || ca || serverName || config.TEMPORAL_API_KEY);
  const useTls = config.TEMPORAL_TLS === undefined ? implied : config.TEMPORAL_TLS === 'true';
  if (!useTls && (crt || ca || serverName)) {
    throw new ConfigError('TEMPORAL_TLS=false contradicts the TEMPORAL_TLS_* settings given');
  }
  const options: TemporalConnectionOptions = { address: config.TEMPORAL_ADDRESS };
  if (useTls) {
    options.tls = {
      ...(serverName ? { serverNameOverride: serverName } : {}),
      ...(ca ? { serverRootCACertificate: ca } : {}),
      ...(crt && key ? { clientCertPair: { crt, key } } : {}),
    };
  }
  // R4: a token of Quire's own OAuth client (net/temporalToken.ts) travels in plaintext only
  // where the settings say so: a private network, or the loopback of one machine.
  if (!useTls && config.TEMPORAL_OAUTH_TOKEN_URL) options.tls = false;
  if (config.TEMPORAL_API_KEY) options.apiKey = config.TEMPORAL_API_KEY;
  return options;
}

/**
 * P6: the worker's native connection sends its requests uncompressed. The SDK's default
 * gzips every call: each poll, heartbeat and task completion pays a fresh deflate state on
 * the worker and an inflate on the server, for messages of a few hundred bytes that
 * compression does not shrink. Nothing large travels on this connection (a page's
 * text is in PostgreSQL, its image in the blob store), so the bytes saved are nothing
 * beside the CPU.
 */
export const WORKER_GRPC_COMPRESSION = { codec: 'none' } as const;

/** The worker's native connection: the shared options, uncompressed, with the token if any. */
export function workerConnectionOptions(
  config: QuireConfig,
  apiKey?: string,
  files: ConfigFiles = configFiles,
): NativeConnectionOptions {
  return {
    ...temporalConnectionOptions(config, files),
    ...(apiKey ? { apiKey } : {}),
    grpcCompression: WORKER_GRPC_COMPRESSION,
  };
}
