import { randomBytes } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QuireClient } from '../../client';
import { parseConfig } from '../../core/config';
import { temporalConnectionOptions } from '../../core/temporalConnection';
import { createJobStore } from '../../db/jobStore';
import { startTlsFront, type TlsFront } from '../support/grpcTlsProxy';
import { createTestQuire, type TestQuire, temporalAddress, untilStatus } from '../support/quire';
import { spawnWorker, type WorkerProcess, waitHealthy } from '../support/workerProcess';

/**
 * D2: Quire on a Temporal deployment that demands TLS, a client certificate and an API key
 * (as Temporal Cloud or a self-hosted cluster with mTLS do), configured by the variables
 * Temporal's own clients read. The front records what every call presented.
 */
let quire: TestQuire;
let front: TlsFront;
const processes: WorkerProcess[] = [];
const apiKey = `tk_${randomBytes(16).toString('hex')}`;

beforeAll(async () => {
  quire = await createTestQuire();
  front = await startTlsFront(temporalAddress());
});
afterAll(async () => {
  for (const p of processes) p.child.kill('SIGKILL');
  await front?.close();
  await quire?.close();
});

const tlsEnv = () => ({
  TEMPORAL_ADDRESS: front.address,
  TEMPORAL_TLS_SERVER_CA_CERT_PATH: front.files.ca,
  TEMPORAL_TLS_SERVER_NAME: front.serverName,
  TEMPORAL_TLS_CLIENT_CERT_PATH: front.files.clientCert,
  TEMPORAL_TLS_CLIENT_KEY_PATH: front.files.clientKey,
  TEMPORAL_API_KEY: apiKey,
});

describe('Temporal over TLS with a client certificate and an API key (D2)', () => {
  it('D2 a worker and the typed client reach Temporal through mTLS with an API key; a job completes and every call carried both', async () => {
    const worker = spawnWorker(quire, 'tls-worker', tlsEnv());
    processes.push(worker);
    await waitHealthy(worker);
    const config = parseConfig({
      ...tlsEnv(),
      DATABASE_URL: quire.config.DATABASE_URL,
      QUIRE_TASK_QUEUE: quire.config.QUIRE_TASK_QUEUE,
      QUIRE_SECRET_KEY: quire.config.QUIRE_SECRET_KEY,
      QUIRE_ENABLE_SIMULATED: '1',
      QUIRE_DEFAULT_PROVIDER: 'simulated',
    });
    const connection = await Connection.connect(temporalConnectionOptions(config));
    try {
      const temporal = new Client({ connection, namespace: config.TEMPORAL_NAMESPACE });
      const client = QuireClient.fromConfig(config, temporal, createJobStore(quire.db.pool), [
        'simulated',
      ]);
      const ws = await quire.workspace();
      const job = await client.startJob({
        workspaceId: ws,
        pageId: await quire.page(ws),
        options: { simulated: { lines: 3 } },
      });
      await untilStatus(quire, ws, job.jobId, 'completed', 60_000);
      // The engine step commits (P6); the run ends in the workflow task after it, over TLS too.
      const handle = temporal.workflow.getHandle(job.workflowId);
      expect(await handle.result()).toMatchObject({ status: 'completed', resultRevision: 1 });
      expect((await handle.describe()).status.name).toBe('COMPLETED');
    } finally {
      await connection.close();
    }
    const polls = front.calls.filter((c) => c.path.endsWith('/PollActivityTaskQueue'));
    expect(polls.length).toBeGreaterThan(0);
    expect(front.calls.some((c) => c.path.endsWith('/StartWorkflowExecution'))).toBe(true);
    expect(front.calls.every((c) => c.clientName === 'quire-fleet')).toBe(true);
    expect(front.calls.every((c) => c.authorization === `Bearer ${apiKey}`)).toBe(true);
    // Logs never carry secrets.
    expect(worker.output()).not.toContain(apiKey);
    worker.child.kill('SIGTERM');
    await worker.exited;
  });

  it('D2 a worker whose certificate the deployment does not accept refuses to start, and never reaches Temporal', async () => {
    const {
      TEMPORAL_TLS_CLIENT_CERT_PATH: _c,
      TEMPORAL_TLS_CLIENT_KEY_PATH: _k,
      ...noCert
    } = tlsEnv();
    const worker = spawnWorker(quire, 'tls-no-cert', noCert);
    processes.push(worker);
    const exit = await worker.exited;
    expect(exit.code).not.toBe(0);
    // The front refuses the handshake: no call of it was ever passed on.
    expect(front.calls.every((c) => c.clientName === 'quire-fleet')).toBe(true);
    expect(worker.output()).not.toContain(apiKey);
  });

  it('D2 an unreadable certificate file is a configuration error naming the variable, before any connection', async () => {
    const worker = spawnWorker(quire, 'tls-missing-file', {
      ...tlsEnv(),
      TEMPORAL_TLS_CLIENT_KEY_PATH: '/nonexistent/quire-client.key',
    });
    processes.push(worker);
    const exit = await worker.exited;
    expect(exit.code).not.toBe(0);
    expect(worker.output()).toMatch(/TEMPORAL_TLS_CLIENT_KEY_PATH: cannot read \/nonexistent/);
  });
});
