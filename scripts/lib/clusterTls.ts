import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { TLSConfig } from '@temporalio/client';

/**
 * X7: the certificates of cluster mode's Temporal server, made once by `openssl` in the
 * cluster's directory (`tls/`, private keys 0600). Two authorities, so that no certificate
 * of Quire's processes opens the internal frontend:
 * - the internode authority signs the server's own certificate, which its services present
 *   to each other (internode and membership traffic, the internal frontend, which checks no
 *   token) and which the cluster's own set-up uses;
 * - the client authority signs the certificates of Quire's processes and of the Temporal UI,
 *   which the public frontend accepts (and then checks their token, R4).
 */
export interface ClusterTls {
  /** Verifies the server: the internode authority. */
  serverCa: string;
  /** The authority the public frontend trusts for client certificates. */
  clientCa: string;
  serverCert: string;
  serverKey: string;
  /** Quire's workers, web replicas and admin CLI. */
  clientCert: string;
  clientKey: string;
  uiCert: string;
  uiKey: string;
  /** The name every client checks the server's certificate for. */
  serverName: string;
}

export const TEMPORAL_SERVER_NAME = 'localhost';
const DAYS = 825;

export function clusterTlsFiles(dir: string): ClusterTls {
  const tls = join(dir, 'tls');
  return {
    serverCa: join(tls, 'internode-ca.pem'),
    clientCa: join(tls, 'client-ca.pem'),
    serverCert: join(tls, 'temporal-server.pem'),
    serverKey: join(tls, 'temporal-server-key.pem'),
    clientCert: join(tls, 'quire.pem'),
    clientKey: join(tls, 'quire-key.pem'),
    uiCert: join(tls, 'temporal-ui.pem'),
    uiKey: join(tls, 'temporal-ui-key.pem'),
    serverName: TEMPORAL_SERVER_NAME,
  };
}

function openssl(args: string[], input?: string): void {
  const result = spawnSync('openssl', args, { encoding: 'utf8', input });
  if (result.error || result.status !== 0) {
    throw new Error(
      `openssl ${args[0]} failed (X7 needs the openssl program): ${result.stderr || result.error}`,
    );
  }
}

/** A P-256 key, 0600. */
function newKey(path: string): void {
  openssl(['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', path]);
  chmodSync(path, 0o600);
}

function authority(dir: string, name: string, subject: string): { cert: string; key: string } {
  const key = join(dir, `${name}-key.pem`);
  const cert = join(dir, `${name}.pem`);
  newKey(key);
  openssl([
    'req',
    '-x509',
    '-new',
    '-key',
    key,
    '-out',
    cert,
    '-days',
    String(DAYS),
    '-subj',
    subject,
    '-addext',
    'basicConstraints=critical,CA:TRUE,pathlen:0',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
  ]);
  return { cert, key };
}

function issue(
  ca: { cert: string; key: string },
  out: { cert: string; key: string },
  subject: string,
  extensions: string[],
): void {
  newKey(out.key);
  const csr = `${out.cert}.csr`;
  const ext = `${out.cert}.ext`;
  openssl(['req', '-new', '-key', out.key, '-out', csr, '-subj', subject]);
  writeFileSync(ext, `${extensions.join('\n')}\n`);
  openssl([
    'x509',
    '-req',
    '-in',
    csr,
    '-CA',
    ca.cert,
    '-CAkey',
    ca.key,
    '-CAcreateserial',
    '-out',
    out.cert,
    '-days',
    String(DAYS),
    '-extfile',
    ext,
  ]);
  rmSync(csr);
  rmSync(ext);
}

function validForADay(cert: string): boolean {
  return spawnSync('openssl', ['x509', '-in', cert, '-noout', '-checkend', '86400']).status === 0;
}

/**
 * The cluster's certificates, made if missing or about to expire. The authorities' keys stay
 * beside them (0600): the cluster's directory is the installation's, like its secret key.
 */
export function ensureClusterTls(dir: string): ClusterTls {
  const files = clusterTlsFiles(dir);
  const all = [files.serverCa, files.clientCa, files.serverCert, files.clientCert, files.uiCert];
  if (all.every((file) => existsSync(file) && validForADay(file))) return files;
  const tlsDir = join(dir, 'tls');
  rmSync(tlsDir, { recursive: true, force: true });
  mkdirSync(tlsDir, { recursive: true, mode: 0o700 });
  const internode = authority(tlsDir, 'internode-ca', '/O=Quire cluster/CN=Temporal internode CA');
  const clients = authority(tlsDir, 'client-ca', '/O=Quire cluster/CN=Temporal client CA');
  issue(internode, { cert: files.serverCert, key: files.serverKey }, '/CN=temporal-server', [
    'basicConstraints=critical,CA:FALSE',
    'keyUsage=critical,digitalSignature',
    // The server's services are clients of each other with this same certificate.
    'extendedKeyUsage=serverAuth,clientAuth',
    `subjectAltName=DNS:${TEMPORAL_SERVER_NAME},DNS:temporal,IP:127.0.0.1`,
  ]);
  for (const [out, name] of [
    [{ cert: files.clientCert, key: files.clientKey }, 'quire'],
    [{ cert: files.uiCert, key: files.uiKey }, 'temporal-ui'],
  ] as const) {
    issue(clients, out, `/CN=${name}`, [
      'basicConstraints=critical,CA:FALSE',
      'keyUsage=critical,digitalSignature',
      'extendedKeyUsage=clientAuth',
    ]);
  }
  return files;
}

/**
 * The TLS options of a Temporal client: `client` with Quire's certificate (the public
 * frontend), `internode` with the server's own (the internal frontend: the cluster's set-up).
 */
export function temporalTlsConfig(tls: ClusterTls, as: 'client' | 'internode'): TLSConfig {
  const [crt, key] =
    as === 'client' ? [tls.clientCert, tls.clientKey] : [tls.serverCert, tls.serverKey];
  return {
    serverNameOverride: tls.serverName,
    serverRootCACertificate: readFileSync(tls.serverCa),
    clientCertPair: { crt: readFileSync(crt), key: readFileSync(key) },
  };
}

/** The settings of every Quire process for Temporal's TLS (core/temporalConnection.ts). */
export function temporalTlsEnv(tls: ClusterTls): Record<string, string> {
  return {
    TEMPORAL_TLS: 'true',
    TEMPORAL_TLS_CLIENT_CERT_PATH: tls.clientCert,
    TEMPORAL_TLS_CLIENT_KEY_PATH: tls.clientKey,
    TEMPORAL_TLS_SERVER_CA_CERT_PATH: tls.serverCa,
    TEMPORAL_TLS_SERVER_NAME: tls.serverName,
  };
}
