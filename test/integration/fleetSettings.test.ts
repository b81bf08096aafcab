import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { canonicalKeyFor, createLocalBlobStore, newUploadId, temporaryKeyFor } from '../../blobs';
import { auditInvariants } from '../../db/audit';
import { insertBlob, lockBlobForReference } from '../../db/blobs';
import { createPage, prepareItem } from '../../db/ingest';
import { checkInstallationSettings } from '../../db/installationSettings';
import { listAttempts } from '../../db/jobs';
import { withTransaction } from '../../db/pool';
import { createQuireWorker } from '../../worker/createWorker';
import { TEST_PUBLIC_URL } from '../support/pages';
import { createTestQuire, silentLogger, type TestQuire, untilStatus } from '../support/quire';
import { png } from '../support/uploadFixtures';
import { eventually } from '../support/wait';
import { spawnWorker, type WorkerProcess, waitHealthy } from '../support/workerProcess';

/**
 * D8: one installation, one configuration beyond the key. The blob store's identity and the
 * other settings the fleet shares are recorded by the first process and checked by every later
 * one; a worker that cannot read what the installation wrote is a configuration fault.
 */
let quire: TestQuire;
let ws: number;
const processes: WorkerProcess[] = [];
const tempDir = (prefix: string) => mkdtempSync(join(tmpdir(), prefix));

beforeAll(async () => {
  quire = await createTestQuire();
  ws = await quire.workspace();
});
afterAll(async () => {
  for (const p of processes) p.child.kill('SIGKILL');
  await quire?.close();
});

describe('one fleet configuration beyond the key (D8)', () => {
  it('D8 a worker with another blob store refuses to start: exit 78 naming the setting, while workers with the recorded store start', async () => {
    const shared = tempDir('quire-fleet-blobs-');
    const first = spawnWorker(quire, 'settings-first', { QUIRE_BLOB_DIR: shared });
    processes.push(first);
    await waitHealthy(first);
    const same = spawnWorker(quire, 'settings-same', { QUIRE_BLOB_DIR: shared });
    processes.push(same);
    await waitHealthy(same);

    const otherDir = spawnWorker(quire, 'settings-other-dir', {
      QUIRE_BLOB_DIR: tempDir('quire-other-blobs-'),
    });
    processes.push(otherDir);
    expect((await otherDir.exited).code).toBe(78);
    expect(otherDir.output()).toMatch(/QUIRE_BLOB_DIR is ".*" here, but this installation's/);

    const bucket = spawnWorker(quire, 'settings-bucket', {
      QUIRE_BLOB_STORE: 's3',
      QUIRE_S3_BUCKET: 'another-bucket',
      QUIRE_S3_ENDPOINT: 'http://127.0.0.1:9',
    });
    processes.push(bucket);
    expect((await bucket.exited).code).toBe(78);
    expect(bucket.output()).toMatch(/QUIRE_BLOB_STORE is "s3" here/);

    const { rows } = await quire.db.pool.query(
      'SELECT name, value FROM installation_settings ORDER BY name',
    );
    expect(rows).toEqual([
      { name: 'QUIRE_BLOB_DIR', value: shared },
      { name: 'QUIRE_BLOB_STORE', value: 'local' },
      { name: 'TEMPORAL_NAMESPACE', value: 'default' },
    ]);
    for (const worker of [first, same]) worker.child.kill('SIGTERM');
    await Promise.all([first.exited, same.exited]);
  });

  it('D8 the check names the first differing setting and records nothing when it refuses', async () => {
    const before = await quire.db.pool.query(
      'SELECT count(*)::int AS n FROM installation_settings',
    );
    const refused = await checkInstallationSettings(quire.db.pool, {
      QUIRE_BLOB_STORE: 'local',
      QUIRE_BLOB_DIR: '/elsewhere',
      QUIRE_NEW_SETTING: 'x',
    });
    expect(refused).toMatchObject({ ok: false, setting: 'QUIRE_BLOB_DIR' });
    const after = await quire.db.pool.query('SELECT count(*)::int AS n FROM installation_settings');
    expect(after.rows[0].n).toBe(before.rows[0].n);
  });

  it('D8 a worker that cannot read an object the installation wrote stops taking work and charges nothing; the job completes on a worker that can', async () => {
    // The page's image, written to the installation's store as an upload leaves it.
    const bytes = png(24, 16);
    const uploadId = newUploadId();
    const temp = temporaryKeyFor(ws, uploadId);
    const { sha256, size } = await quire.blobStore.writeTemporary(
      temp,
      (async function* () {
        yield bytes;
      })(),
    );
    const key = canonicalKeyFor(ws, sha256, uploadId);
    await quire.blobStore.promote(temp, key);
    await insertBlob(quire.db.pool, {
      key,
      workspaceId: ws,
      sha256hex: sha256,
      sizeBytes: size,
      mediaType: 'image/png',
    });
    const pageId = await withTransaction(quire.db.pool, async (tx) => {
      const position = await prepareItem(tx, ws, 'stored');
      await lockBlobForReference(tx, ws, key);
      const page = await createPage(
        tx,
        {
          workspaceId: ws,
          itemId: 'stored',
          position,
          kind: 'image',
          blobKey: key,
          mediaType: 'image/png',
          width: 24,
          height: 16,
          durationMs: null,
        },
        TEST_PUBLIC_URL,
      );
      return page.pageId;
    });

    let faulted: string | undefined;
    const stranger = await createQuireWorker({
      config: quire.config,
      pool: quire.db.pool,
      providers: quire.providers,
      connection: quire.connection,
      client: quire.client,
      // Another store: an empty directory where the installation's objects are not.
      blobStore: createLocalBlobStore(tempDir('quire-stranger-blobs-')),
      workflowBundle: process.env.QUIRE_TEST_WORKFLOW_BUNDLE
        ? { codePath: process.env.QUIRE_TEST_WORKFLOW_BUNDLE }
        : undefined,
      logger: silentLogger,
      identity: 'stranger-store',
      onConfigurationFault: (setting) => {
        faulted = setting;
      },
    });
    const strangerRun = stranger.run();
    const job = await quire.client.startJob({
      workspaceId: ws,
      pageId,
      options: { simulated: { lines: 3 } },
    });
    // The stranger met the missing object, said which settings, and stopped polling.
    await eventually(async () => (faulted ? true : undefined), 30_000, 50);
    expect(faulted).toMatch(/QUIRE_BLOB_DIR/);
    await strangerRun;
    expect(stranger.getState()).toBe('STOPPED');
    expect(await listAttempts(quire.db.pool, job.jobId)).toMatchObject([
      { attemptNumber: 1, outcome: 'running' },
    ]);

    const holder = await quire.newWorker('store-holder');
    const holderRun = holder.run();
    try {
      await untilStatus(quire, ws, job.jobId, 'completed', 60_000);
      const attempts = await listAttempts(quire.db.pool, job.jobId);
      expect(attempts.map((a) => [a.attemptNumber, a.outcome, a.refunded])).toEqual([
        [1, 'completed', false],
      ]);
      expect(await auditInvariants(quire.db.pool)).toEqual([]);
    } finally {
      holder.shutdown();
      await holderRun;
    }
  });
});
