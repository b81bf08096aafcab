import { spawnSync } from 'node:child_process';
import { readFileSync, statSync } from 'node:fs';
import { Connection, type TLSConfig } from '@temporalio/client';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { temporalTlsConfig } from '../../scripts/lib/clusterTls';
import { adminRequest } from '../../scripts/lib/identityProvider';
import { startTestCluster, type TestCluster } from '../support/cluster';

/**
 * X7: the installation's own channels are its own. In cluster mode the Temporal server's
 * internal frontend (which checks no token) answers only a client holding the server's own
 * certificate, its public frontend only a client certificate of the installation's (and then
 * a token, R4); Hydra's admin API listens on a Unix socket only the installation's user can
 * open, on no port; the cluster's PostgreSQL asks every role for its password.
 */
let cluster: TestCluster;

beforeAll(async () => {
  cluster = await startTestCluster({ workers: 1, webReplicas: 0, ui: true });
}, 900_000);

afterAll(async () => {
  await cluster?.close();
});

/** Connects and lists workflows; resolves to the error, or undefined when the call worked. */
async function listWorkflows(address: string, tls?: TLSConfig): Promise<unknown> {
  let connection: Connection | undefined;
  try {
    connection = await Connection.connect({ address, tls, connectTimeout: 5_000 });
    const open = connection;
    // A refused handshake is retried by the channel until the deadline.
    await open.withDeadline(Date.now() + 5_000, () =>
      open.workflowService.listWorkflowExecutions({ namespace: 'default' }),
    );
    return undefined;
  } catch (error) {
    return error ?? new Error('refused');
  } finally {
    await connection?.close().catch(() => {});
  }
}

/** Runs `script` (node) as the machine's `nobody`, a local user without the installation's rights. */
function asUnprivileged(script: string): { status: number | null; output: string } {
  const result = spawnSync(
    'runuser',
    ['-u', 'nobody', '--', process.execPath, '--input-type=module', '-e', script],
    { encoding: 'utf8', cwd: '/', timeout: 30_000 },
  );
  return { status: result.status, output: `${result.stdout}${result.stderr}` };
}

describe('the installation’s own channels are its own (X7)', () => {
  it('X7 a client without the installation’s certificate can list no workflow through the internal frontend, nor reach the frontend', async () => {
    const { temporalTls, temporalAddress, temporalInternalAddress } = cluster.cluster;
    const ca = readFileSync(temporalTls.serverCa);
    // Plaintext, TLS without a certificate, and a certificate of Quire's processes (whose
    // authority the internal frontend does not trust): all refused.
    expect(await listWorkflows(temporalInternalAddress)).toBeDefined();
    expect(
      await listWorkflows(temporalInternalAddress, {
        serverRootCACertificate: ca,
        serverNameOverride: temporalTls.serverName,
      }),
    ).toBeDefined();
    expect(
      await listWorkflows(temporalInternalAddress, temporalTlsConfig(temporalTls, 'client')),
    ).toBeDefined();
    // The server's own certificate lists them: the refusals above are the certificate's.
    expect(
      await listWorkflows(temporalInternalAddress, temporalTlsConfig(temporalTls, 'internode')),
    ).toBeUndefined();

    // The public frontend: no certificate, no connection (before any token is looked at).
    expect(await listWorkflows(temporalAddress)).toBeDefined();
    expect(
      await listWorkflows(temporalAddress, {
        serverRootCACertificate: ca,
        serverNameOverride: temporalTls.serverName,
      }),
    ).toBeDefined();
    // With Quire's certificate and no token: in, and refused by the authorizer (R4).
    expect(
      await listWorkflows(temporalAddress, temporalTlsConfig(temporalTls, 'client')),
    ).toMatchObject({ code: 7 }); // PERMISSION_DENIED

    // The internal frontend serves no HTTP API; the private keys are the installation's.
    const internalPort = Number(temporalInternalAddress.split(':').pop());
    await expect(
      fetch(`http://127.0.0.1:${internalPort + 2}/api/v1/namespaces`, {
        signal: AbortSignal.timeout(5_000),
      }),
    ).rejects.toThrow();
    for (const key of [temporalTls.serverKey, temporalTls.clientKey, temporalTls.uiKey]) {
      expect({ key, mode: statSync(key).mode & 0o777 }).toEqual({ key, mode: 0o600 });
    }
  }, 120_000);

  it('X7 a local user other than the installation’s cannot reach Hydra’s admin API to accept a login; it listens on no port', async () => {
    const identity = cluster.cluster.identity;
    expect(identity).toBeDefined();
    const socket = identity!.adminSocket;
    expect(statSync(socket).isSocket()).toBe(true);
    expect(statSync(socket).mode & 0o777).toBe(0o600);

    // A real login waiting at the provider: the console's client asks for a sign-in.
    const clientId = cluster.cluster.quireEnv.QUIRE_OIDC_CLIENT_ID as string;
    const authorize = new URL(`${identity!.issuer}/oauth2/auth`);
    authorize.search = new URLSearchParams({
      client_id: clientId,
      response_type: 'code',
      scope: 'openid',
      redirect_uri: `${cluster.cluster.quireEnv.QUIRE_PUBLIC_URL}/signin/oidc/callback`,
      state: 'x7-state-0123456789',
    }).toString();
    const started = await fetch(authorize, { redirect: 'manual' });
    const toLogin = new URL(started.headers.get('location') ?? '');
    const challenge = toLogin.searchParams.get('login_challenge') ?? '';
    expect(challenge).not.toBe('');
    const acceptPath = `/admin/oauth2/auth/requests/login/accept?login_challenge=${encodeURIComponent(challenge)}`;

    // Another local user: the socket refuses them, whatever they ask.
    const attempt = asUnprivileged(`
      import { request } from 'node:http';
      const req = request({ socketPath: ${JSON.stringify(socket)}, method: 'PUT',
        path: ${JSON.stringify(acceptPath)}, headers: { 'content-type': 'application/json' } },
        (res) => { console.log('status', res.statusCode); process.exit(0); });
      req.on('error', (error) => { console.log('error', error.code); process.exit(3); });
      req.end(JSON.stringify({ subject: 'intruder@example.test' }));
    `);
    expect(attempt).toEqual({ status: 3, output: 'error EACCES\n' });
    // Nor is the admin API on the public port, or any other port Hydra listens on.
    const onPublic = await fetch(`${identity!.issuer}${acceptPath}`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ subject: 'intruder@example.test' }),
    });
    expect(onPublic.status).toBe(404);
    // (This cluster's Hydra by the pid on its public port: other Hydras may run on the machine.)
    const listening = spawnSync('ss', ['-ltnpH'], { encoding: 'utf8' }).stdout.split('\n');
    const publicPort = Number(new URL(identity!.issuer).port);
    const portOf = (line: string) => Number(/:(\d+)\s/.exec(line)?.[1]);
    const pid = /"hydra",pid=(\d+)/.exec(
      listening.find((line) => portOf(line) === publicPort) ?? '',
    )?.[1];
    expect(pid).toBeDefined();
    const hydraPorts = listening.filter((line) => line.includes(`"hydra",pid=${pid},`)).map(portOf);
    expect(hydraPorts).toEqual([publicPort]);

    // The installation itself reaches it, and the login is still waiting, unaccepted.
    const login = await adminRequest(
      socket,
      'GET',
      `/admin/oauth2/auth/requests/login?login_challenge=${encodeURIComponent(challenge)}`,
    );
    expect(login.status).toBe(200);
    expect((login.body as { subject?: string }).subject ?? '').toBe('');
  }, 120_000);

  it('X7 the cluster’s PostgreSQL refuses a connection without the role’s password, and each role reaches only its databases', async () => {
    const { postgres, passwordsFile } = cluster.cluster;
    expect(statSync(passwordsFile).mode & 0o777).toBe(0o600);
    const passwords = JSON.parse(readFileSync(passwordsFile, 'utf8')) as Record<string, string>;
    expect(Object.keys(passwords).sort()).toEqual(['hydra', 'postgres', 'quire', 'temporal']);
    expect(new Set(Object.values(passwords)).size).toBe(4);
    const connect = async (options: pg.ClientConfig) => {
      const client = new pg.Client({ connectionTimeoutMillis: 5_000, ...options });
      try {
        await client.connect();
        return (await client.query('SELECT current_user AS who')).rows[0].who as string;
      } finally {
        await client.end().catch(() => {});
      }
    };
    const tcp = { host: '127.0.0.1', port: postgres.port };
    for (const [user, database] of [
      ['postgres', 'postgres'],
      ['quire', 'quire'],
      ['temporal', 'temporal'],
      ['hydra', 'hydra'],
    ] as const) {
      // No password, a wrong one: refused (over TCP and over the server's Unix socket).
      await expect(connect({ ...tcp, user, database, password: '' })).rejects.toThrow();
      await expect(
        connect({ ...tcp, user, database, password: 'not-the-password' }),
      ).rejects.toMatchObject({ code: '28P01' });
      await expect(
        connect({ host: postgres.socketDir, port: postgres.port, user, database, password: '' }),
      ).rejects.toThrow();
      // Its own password: in.
      expect(await connect({ ...tcp, user, database, password: passwords[user] })).toBe(user);
    }
    // Quire's role does not reach Temporal's or Hydra's databases, nor they Quire's.
    for (const [user, database] of [
      ['quire', 'temporal'],
      ['quire', 'hydra'],
      ['temporal', 'quire'],
      ['hydra', 'quire'],
    ] as const) {
      await expect(
        connect({ ...tcp, user, database, password: passwords[user] }),
      ).rejects.toMatchObject({ code: '42501' }); // insufficient privilege (CONNECT)
    }
    // Every Quire process connects as Quire's role, with its password.
    const url = new URL(cluster.cluster.databaseUrl);
    expect(url.username).toBe('quire');
    expect(url.password).toBe(passwords.quire);
    expect(url.pathname).toBe('/quire');
  }, 120_000);
});
