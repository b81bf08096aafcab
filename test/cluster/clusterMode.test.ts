import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ListObjectsV2Command } from '@aws-sdk/client-s3';
import { Connection } from '@temporalio/client';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { clusterTlsFiles, temporalTlsConfig } from '../../scripts/lib/clusterTls';
import { s3ClientFor } from '../../scripts/lib/objectServer';
import { freePortRange, portFree } from '../../scripts/lib/processes';
import { ONE_HOST_GO_RUNTIME } from '../../scripts/lib/temporal';
import { CLUSTER_TEST_WEB_DIST } from '../support/cluster';
import { environOf } from '../support/proc';
import { file, png, uploadRequest } from '../support/uploadFixtures';
import { eventually } from '../support/wait';

/**
 * D2: `npm run start:cluster` (scripts/quire.mjs cluster) brings the production topology up,
 * prints where everything is, and Ctrl-C leaves nothing running.
 */
const ROOT = join(__dirname, '../..');
let child: ChildProcess | undefined;
const dir = mkdtempSync(join(tmpdir(), 'quire-cluster-cmd-'));

afterAll(() => {
  if (child?.pid && child.exitCode === null) process.kill(-child.pid, 'SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('cluster mode (D2)', () => {
  it('D2 npm run start:cluster starts Temporal on PostgreSQL, the UI, the object store, 3 workers and 2 web replicas with one key; D9 a setting in the settings file reaches every process; P6 Temporal on one Go processor; Ctrl-C leaves nothing running', async () => {
    const base = await freePortRange(20);
    // D9: settings only the settings file names (not the command's environment).
    const settingsFile = join(dir, 'quire-settings.env');
    writeFileSync(
      settingsFile,
      [
        '# a settings file as a user writes one',
        'QUIRE_NOTIFY_URL="http://127.0.0.1:9/notify"',
        'export QUIRE_RECOGNIZE_SLICE_MS=9000',
        'QUIRE_WEBHOOK_ALLOW_HOSTS=hooks.example.test # allow-list',
        '',
      ].join('\n'),
    );
    let output = '';
    child = spawn(process.execPath, ['scripts/quire.mjs', 'cluster'], {
      cwd: ROOT,
      env: {
        ...process.env,
        QUIRE_CLUSTER_DIR: dir,
        QUIRE_CLUSTER_PORT_BASE: String(base),
        QUIRE_CLUSTER_WEB_DIST: process.env.QUIRE_TEST_CLUSTER_WEB_DIST ?? CLUSTER_TEST_WEB_DIST,
        QUIRE_ENABLE_SIMULATED: '1',
        QUIRE_DEFAULT_PROVIDER: 'simulated',
        QUIRE_SECRET_KEY: '',
        QUIRE_ENV_FILE: settingsFile,
        // P6: the server's Go runtime is cluster mode's own, as no environment overrides it.
        ...Object.fromEntries(Object.keys(ONE_HOST_GO_RUNTIME).map((key) => [key, undefined])),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
      // Its own process group, as a terminal's foreground job: Ctrl-C reaches the group.
      detached: true,
    });
    child.stdout?.on('data', (d) => {
      output += d;
    });
    child.stderr?.on('data', (d) => {
      output += d;
    });
    await eventually(
      async () => (output.includes('Quire cluster is running') ? true : undefined),
      600_000,
      500,
    ).catch(() => {
      throw new Error(`cluster mode did not start:\n${output.slice(-4000)}`);
    });
    const field = (name: string) => new RegExp(`${name}\\s+(\\S+)`).exec(output)?.[1] ?? '';
    const apiKey = field('API key');
    const workspaceId = field('workspace');
    // One console behind one public origin, its replicas named as such (X7).
    expect(/^ {2}console\s+(\S+) \(public origin/m.exec(output)?.[1]).toBe(
      `http://localhost:${base + 13}`,
    );
    const consoles = [...output.matchAll(/web-\d\s+(\S+) \(console replica\)/g)].map((m) => m[1]!);
    expect(consoles).toEqual([`http://127.0.0.1:${base + 13}`, `http://127.0.0.1:${base + 14}`]);
    expect(output).not.toMatch(/console \d/);
    expect(field('Temporal UI')).toBe(`http://localhost:${base + 11}`);
    expect(output).toContain(`${dir}/logs/`);

    // Both replicas answer the printed key; the UI serves; Temporal answers with its namespace.
    for (const url of consoles) {
      const response = await fetch(`${url}/api/v1/workspaces/${workspaceId}`, {
        headers: { Authorization: `Bearer ${apiKey}` },
      });
      expect(response.status).toBe(200);
    }
    expect((await fetch(`http://127.0.0.1:${base + 11}/`)).status).toBe(200);
    // R4: the Temporal UI is the operators': its own OIDC login, no API without a token, write
    // actions off; the printed operator signs in at the cluster's identity provider.
    const ui = `http://127.0.0.1:${base + 11}`;
    const settings = await (await fetch(`${ui}/api/v1/settings`)).json();
    expect(settings.Auth.Enabled).toBe(true);
    expect(settings.DisableWriteActions).toBe(true);
    const unauthenticated = await fetch(
      `${ui}/api/v1/namespaces/default/workflows?query=${encodeURIComponent(`QuireWorkspaceId=${workspaceId}`)}`,
    );
    expect(unauthenticated.status).toBe(401);
    expect(output).toMatch(/UI operator\s+operator@quire\.localhost \/ \S+/);
    // R4: the frontend itself refuses callers without a token of the provider's, so the UI's
    // login is not the only gate; the bootstrap went through the internal frontend.
    // X7: with the installation's client certificate, so that the missing token is refused.
    const tls = clusterTlsFiles(dir);
    const anonymous = await Connection.connect({
      address: `127.0.0.1:${base}`,
      tls: temporalTlsConfig(tls, 'client'),
    });
    await expect(
      anonymous.workflowService.listWorkflowExecutions({ namespace: 'default' }),
    ).rejects.toMatchObject({ code: 7 }); // PERMISSION_DENIED
    await anonymous.close();
    const connection = await Connection.connect({
      address: `127.0.0.1:${base + 17}`,
      tls: temporalTlsConfig(tls, 'internode'),
    });
    const attributes = await connection.operatorService.listSearchAttributes({
      namespace: 'default',
    });
    expect(Object.keys(attributes.customAttributes ?? {})).toEqual(
      expect.arrayContaining(['QuireWorkspaceId', 'QuireJobId', 'QuireStatus']),
    );
    await connection.close();

    // Temporal's history and visibility live in the cluster's PostgreSQL.
    // X7: as Temporal's role, with its password kept in the cluster's directory.
    const passwords = JSON.parse(readFileSync(join(dir, 'postgres-passwords.json'), 'utf8'));
    expect(output).not.toContain(passwords.quire);
    const temporalDb = new pg.Client({
      host: '127.0.0.1',
      port: base + 10,
      user: 'temporal',
      password: passwords.temporal,
      database: 'temporal',
    });
    await temporalDb.connect();
    expect(
      (await temporalDb.query('SELECT count(*)::int AS n FROM namespaces')).rows[0].n,
    ).toBeGreaterThan(0);
    await temporalDb.end();

    // An upload through replica 1 lands in the object store; a worker runs its job from there.
    const upload = uploadRequest([file(png(40, 30))]);
    const created = await fetch(`${consoles[0]}/api/v1/workspaces/${workspaceId}/batches`, {
      method: 'POST',
      headers: {
        Authorization: `Bearer ${apiKey}`,
        'content-type': upload.headers.get('content-type') ?? '',
      },
      body: Buffer.from(await upload.arrayBuffer()),
    });
    expect(created.status).toBe(201);
    const batch = (await created.json()) as { pages: Array<{ pageId: number; jobId: string }> };
    const credentials = JSON.parse(
      readFileSync(join(dir, 'object-store-credentials.json'), 'utf8'),
    );
    const s3 = s3ClientFor({
      port: base + 12,
      region: 'us-east-1',
      bucket: 'quire',
      dataDir: '',
      ...credentials,
    });
    const listed = await s3.send(
      new ListObjectsV2Command({ Bucket: 'quire', Prefix: `ws/${workspaceId}/` }),
    );
    s3.destroy();
    expect(listed.Contents?.length).toBe(1);
    const jobId = batch.pages[0]!.jobId;
    await eventually(
      async () => {
        const response = await fetch(
          `${consoles[1]}/api/v1/workspaces/${workspaceId}/transcription-jobs/${jobId}`,
          { headers: { Authorization: `Bearer ${apiKey}` } },
        );
        const job = (await response.json()) as { status?: string };
        return job.status === 'completed' ? true : undefined;
      },
      120_000,
      500,
    );

    // One key for every Quire process (D1's fingerprint check holds across the fleet).
    const pids = JSON.parse(readFileSync(join(dir, 'pids.json'), 'utf8')) as Record<string, number>;
    const quirePids = Object.entries(pids).filter(([name]) => /^(worker|web)-/.test(name));
    expect(quirePids.map(([name]) => name).sort()).toEqual([
      'web-1',
      'web-2',
      'worker-1',
      'worker-2',
      'worker-3',
    ]);
    const keys = new Set(quirePids.map(([, pid]) => environOf(pid).QUIRE_SECRET_KEY));
    expect(keys.size).toBe(1);
    // D9: every worker and web replica has the settings file's settings.
    for (const [name, pid] of quirePids) {
      expect({
        name,
        settings: Object.entries(environOf(pid))
          .filter(([key]) =>
            /^QUIRE_(NOTIFY_URL|RECOGNIZE_SLICE_MS|WEBHOOK_ALLOW_HOSTS)$/.test(key),
          )
          .map(([key, value]) => `${key}=${value}`)
          .sort(),
      }).toEqual({
        name,
        settings: [
          'QUIRE_NOTIFY_URL=http://127.0.0.1:9/notify',
          'QUIRE_RECOGNIZE_SLICE_MS=9000',
          'QUIRE_WEBHOOK_ALLOW_HOSTS=hooks.example.test',
        ],
      });
    }
    expect([...keys][0]).toBe(readFileSync(join(dir, 'secret-key'), 'utf8').trim());
    // P6: the Temporal server shares this host with the engines: one Go processor.
    const temporalEnv = environOf(pids.temporal!);
    expect(
      Object.fromEntries(Object.keys(ONE_HOST_GO_RUNTIME).map((key) => [key, temporalEnv[key]])),
    ).toEqual(ONE_HOST_GO_RUNTIME);

    // Ctrl-C: the process group gets SIGINT; everything started is gone afterwards.
    const exited = new Promise<number | null>((resolve) => child?.once('exit', resolve));
    process.kill(-(child.pid as number), 'SIGINT');
    expect(await exited).toBe(0);
    const processPids = Object.entries(pids)
      .filter(([name]) => name !== 'postgres')
      .map(([, pid]) => pid);
    for (const pid of processPids) expect(alive(pid)).toBe(false);
    for (let port = base; port < base + 15; port++) {
      expect({ port, free: await portFree(port) }).toEqual({ port, free: true });
    }
  }, 900_000);
});
