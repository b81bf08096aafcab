import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { bundleWorkflowCode, Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { quireSinks } from '../../worker/sinks';
import { STAGE_MEMO_PATCH } from '../../workflows/transcriptionJob';
import { startTestCluster, type TestCluster } from '../support/cluster';
import { eventually } from '../support/wait';

/**
 * D5 rolling deploy on the production topology: the workflow change since the first release
 * (the stage in the memo) is behind `patched()`. Jobs start on workers running the previous
 * workflow code (kept in test/fixtures/workflow-versions, bundled as it was), those workers
 * are stopped mid-job, and workers on the current code finish the same runs. Histories of
 * both versions are kept as fixtures and replay against the current code.
 */
const ROOT = join(__dirname, '../..');
const FIXTURES = join(ROOT, 'test/fixtures/histories');
let t: TestCluster;
let previousBundle: string;
const workDir = join(ROOT, '.data', `workflows-v1-${process.pid}`);

/** The previous workflow source, its relative imports pointed at this checkout. */
async function bundlePrevious(): Promise<string> {
  const source = readFileSync(
    join(ROOT, 'test/fixtures/workflow-versions/transcriptionJob.v1.ts.txt'),
    'utf8',
  ).replace(/from '\.\.\/(activities|core)\//g, `from '${ROOT}/$1/`);
  mkdirSync(workDir, { recursive: true });
  writeFileSync(join(workDir, 'transcriptionJob.ts'), source);
  writeFileSync(
    join(workDir, 'index.ts'),
    `export * from '${ROOT}/workflows/maintenance';\nexport { transcriptionJob } from './transcriptionJob';\n`,
  );
  const { code } = await bundleWorkflowCode({
    workflowsPath: join(workDir, 'index.ts'),
    logger: { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error: console.error },
  });
  const path = join(workDir, 'bundle.js');
  writeFileSync(path, code);
  return path;
}

beforeAll(async () => {
  previousBundle = await bundlePrevious();
  // No worker yet: the previous release's workers come first.
  t = await startTestCluster({ workers: 0, webReplicas: 0 });
}, 900_000);
afterAll(async () => {
  await t?.close();
  rmSync(workDir, { recursive: true, force: true });
});

function patchMarkers(history: { events?: unknown[] | null }): number {
  return (history.events ?? []).filter((e) => {
    const marker = (e as { markerRecordedEventAttributes?: { markerName?: string } })
      .markerRecordedEventAttributes;
    return marker?.markerName === 'core_patch';
  }).length;
}

function memoUpserts(history: { events?: unknown[] | null }): number {
  return (history.events ?? []).filter(
    (e) =>
      (e as { workflowPropertiesModifiedEventAttributes?: unknown })
        .workflowPropertiesModifiedEventAttributes,
  ).length;
}

describe('rolling deploy (D5)', () => {
  it('D5 jobs started on the previous workflow code are finished by workers on the new code; the patch takes effect mid-run', async () => {
    const { workspaceId } = await t.workspace();
    const old = [await t.cluster.addWorker({ QUIRE_WORKFLOW_BUNDLE: previousBundle })];
    old.push(await t.cluster.addWorker({ QUIRE_WORKFLOW_BUNDLE: previousBundle }));
    // One short job finishes wholly on the previous code: its history is the v1 fixture.
    const [v1Only] = await t.startBatch(workspaceId, 1, { lines: 2, latencyMs: 0 });
    await t.untilCompleted(workspaceId, [v1Only!], 120_000);
    const rolling = await t.startBatch(workspaceId, 4, { lines: 16, latencyMs: 250 });
    await eventually(
      async () => {
        const { rows } = await t.pool.query(
          `SELECT count(*)::int AS n FROM transcription_jobs WHERE id = ANY($1) AND completed_segments >= 2`,
          [rolling],
        );
        return rows[0].n === rolling.length ? true : undefined;
      },
      120_000,
      100,
    );
    // The deploy: the previous release drains and stops, the new one takes over.
    await Promise.all(old.map((worker) => worker.stop(20_000)));
    await t.cluster.addWorker();
    await t.cluster.addWorker();
    await t.untilCompleted(workspaceId, rolling, 180_000);
    await t.verify(workspaceId, [v1Only!, ...rolling]);

    const handle = (jobId: string) => t.temporal.workflow.getHandle(`transcription-job-${jobId}`);
    const v1History = await handle(v1Only!).fetchHistory();
    expect(patchMarkers(v1History)).toBe(0);
    expect(memoUpserts(v1History)).toBe(0);
    for (const jobId of rolling) {
      const history = await handle(jobId).fetchHistory();
      // Written by both releases: the patch marker appears once the new code ran it.
      expect(patchMarkers(history)).toBe(1);
      expect(memoUpserts(history)).toBeGreaterThan(0);
      const described = await handle(jobId).describe();
      expect(await described.memo).toMatchObject({ stage: 'done' });
    }

    // The current code replays both versions' histories; the previous code cannot replay
    // what the new code wrote, which is why the change needed its patch.
    const histories = [
      { workflowId: `transcription-job-${v1Only}`, history: v1History },
      {
        workflowId: `transcription-job-${rolling[0]}`,
        history: await handle(rolling[0]!).fetchHistory(),
      },
    ];
    const current = process.env.QUIRE_TEST_WORKFLOW_BUNDLE as string;
    for await (const result of Worker.runReplayHistories(
      { workflowBundle: { codePath: current }, sinks: quireSinks() },
      histories,
    )) {
      expect(result.error).toBeUndefined();
    }
    await expect(
      Worker.runReplayHistory(
        { workflowBundle: { codePath: previousBundle } },
        histories[1]!.history,
      ),
    ).rejects.toThrow();

    if (process.env.QUIRE_RECORD_HISTORIES === '1') {
      for (const [name, jobId] of [
        ['deploy-v1-complete', v1Only],
        ['deploy-v1-then-v2', rolling[0]],
      ] as const) {
        const json = execFileSync(process.env.QUIRE_TEMPORAL_BIN_RESOLVED ?? 'temporal', [
          'workflow',
          'show',
          '--workflow-id',
          `transcription-job-${jobId}`,
          '--address',
          t.cluster.temporalAddress,
          // X7: the frontend asks for the installation's client certificate.
          '--tls-cert-path',
          t.cluster.temporalTls.clientCert,
          '--tls-key-path',
          t.cluster.temporalTls.clientKey,
          '--tls-ca-path',
          t.cluster.temporalTls.serverCa,
          '--tls-server-name',
          t.cluster.temporalTls.serverName,
          '--output',
          'json',
        ]);
        writeFileSync(join(FIXTURES, `${name}.json`), json);
      }
    }
    expect(STAGE_MEMO_PATCH).toBe('quire-stage-memo');
  });

  it('D5 kept histories of both workflow versions replay against the current code', async () => {
    const current = process.env.QUIRE_TEST_WORKFLOW_BUNDLE as string;
    for (const name of ['deploy-v1-complete', 'deploy-v1-then-v2']) {
      const history = JSON.parse(readFileSync(join(FIXTURES, `${name}.json`), 'utf8'));
      expect(patchMarkers(history)).toBe(name === 'deploy-v1-complete' ? 0 : 1);
      await expect(
        Worker.runReplayHistory(
          { workflowBundle: { codePath: current }, sinks: quireSinks() },
          history,
          name,
        ),
      ).resolves.toBeUndefined();
    }
  });
});
