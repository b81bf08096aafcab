import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getJob } from '../../db/jobs';
import { quireSinks } from '../../worker/sinks';
import {
  KEY_FAULT_PATCH,
  RELEASE_2026_12_PATCH,
  STATUS_IN_DATABASE_PATCH,
} from '../../workflows/patches';
import {
  HISTORY_FIXTURES,
  type HistoryEventLike,
  patchIdsOf,
  recordedHistoryFile,
} from '../support/histories';
import { createTestQuire, eventually, type TestQuire, temporalAddress } from '../support/quire';

/**
 * Workflow code must replay every history it ever wrote. Histories of the main paths are
 * recorded here and kept as fixtures (QUIRE_RECORD_HISTORIES=1 rewrites them); both the
 * fresh ones and the kept ones replay without nondeterminism. The key-fault histories are
 * recorded by the workflow tests (test/workflow/keyFault.test.ts), the one from before the
 * key-fault patch by the same scenario on the workflow code of that time.
 */
let quire: TestQuire;
let ws: number;

beforeAll(async () => {
  quire = await createTestQuire();
  ws = await quire.workspace();
});
afterAll(async () => {
  await quire?.close();
});

type KeptHistory = {
  events: Array<
    HistoryEventLike & { timerStartedEventAttributes?: { startToFireTimeout?: string } }
  >;
};

function replayOptions() {
  const codePath = process.env.QUIRE_TEST_WORKFLOW_BUNDLE;
  if (!codePath) throw new Error('no workflow bundle');
  return { workflowBundle: { codePath }, sinks: quireSinks() };
}

describe('replay (determinism)', () => {
  it('T1 histories of the main paths replay without nondeterminism', async () => {
    const worker = await quire.newWorker();
    const recorded: Array<{ name: string; workflowId: string }> = [];
    await worker.runUntil(async () => {
      const paths: Array<[string, 'image' | 'audio', Record<string, unknown>]> = [
        ['image-complete', 'image', { lines: 4 }],
        ['audio-complete', 'audio', { audioSegments: 2 }],
        [
          'image-partial',
          'image',
          { lines: 4, faults: [{ op: 'recognize', category: 'content', segments: [2] }] },
        ],
        [
          'image-retry-then-complete',
          'image',
          { lines: 2, faults: [{ op: 'recognize', category: 'timeout', attempts: [1] }] },
        ],
        [
          'image-pause-then-complete',
          'image',
          {
            lines: 3,
            faults: [
              {
                op: 'recognize',
                category: 'outage',
                attempts: [1],
                segments: [1],
                retryAfterMs: 50,
              },
            ],
          },
        ],
        [
          'image-permanent-failure',
          'image',
          { lines: 2, faults: [{ op: 'recognize', category: 'image' }] },
        ],
      ];
      for (const [name, kind, simulated] of paths) {
        const pageId = await quire.page(ws, kind);
        const job = await quire.client.startJob({
          workspaceId: ws,
          pageId,
          options: { simulated },
        });
        await quire.temporal.workflow.getHandle(job.workflowId).result();
        recorded.push({ name, workflowId: job.workflowId });
      }
      const pageId = await quire.page(ws);
      const canceled = await quire.client.startJob({
        workspaceId: ws,
        pageId,
        options: { simulated: { lines: 20, latencyMs: 100 } },
      });
      await eventually(
        async () =>
          ((await getJob(quire.db.pool, ws, canceled.jobId))?.completedSegments ?? 0) >= 1 ||
          undefined,
      );
      await quire.client.cancelJob(ws, canceled.jobId);
      await quire.temporal.workflow
        .getHandle(canceled.workflowId)
        .result()
        .catch(() => undefined);
      recorded.push({ name: 'image-canceled', workflowId: canceled.workflowId });
    });

    const histories = [];
    for (const { name, workflowId } of recorded) {
      const history = await quire.temporal.workflow.getHandle(workflowId).fetchHistory();
      histories.push({ workflowId, history });
      if (process.env.QUIRE_RECORD_HISTORIES === '1') {
        mkdirSync(HISTORY_FIXTURES, { recursive: true });
        // The CLI writes the same JSON an operator gets from `temporal workflow show -o json`.
        const json = execFileSync(process.env.QUIRE_TEMPORAL_BIN_RESOLVED ?? 'temporal', [
          'workflow',
          'show',
          '--workflow-id',
          workflowId,
          '--address',
          temporalAddress(),
          '--output',
          'json',
        ]);
        writeFileSync(recordedHistoryFile(name), json);
      }
    }
    const results = [];
    for await (const result of Worker.runReplayHistories(replayOptions(), histories))
      results.push(result);
    expect(results).toHaveLength(recorded.length);
    expect(results.filter((r) => r.error)).toEqual([]);
  });

  it('T1 kept history fixtures still replay against the current workflow code', async () => {
    expect(existsSync(HISTORY_FIXTURES)).toBe(true);
    const files = readdirSync(HISTORY_FIXTURES).filter((f) => f.endsWith('.json'));
    expect(files.length).toBeGreaterThanOrEqual(5);
    for (const file of files) {
      const history = JSON.parse(readFileSync(join(HISTORY_FIXTURES, file), 'utf8'));
      await expect(
        Worker.runReplayHistory(replayOptions(), history, file),
      ).resolves.toBeUndefined();
    }
  });

  it('P6 D5 D14 a run begun since the release patch records its marker and the one patch since, and the memo only for stages that wait', async () => {
    const worker = await quire.newWorker();
    const histories = await worker.runUntil(async () => {
      const runs = [];
      for (const simulated of [{ lines: 3 }, { lines: 3, readPages: true }]) {
        const job = await quire.client.startJob({
          workspaceId: ws,
          pageId: await quire.page(ws),
          options: { simulated },
        });
        const handle = quire.temporal.workflow.getHandle(job.workflowId);
        await handle.result();
        runs.push(await handle.fetchHistory());
      }
      return runs;
    });
    const [byLine, readOnce] = histories.map((history) => {
      const events = history.events ?? [];
      const patches = patchIdsOf(history);
      const versionUpserts = events.filter(
        (e) =>
          e.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields
            ?.TemporalChangeVersion,
      ).length;
      const memo = events.flatMap((e) => {
        const stage = e.workflowPropertiesModifiedEventAttributes?.upsertedMemo?.fields?.stage;
        return stage ? [JSON.parse(Buffer.from(stage.data ?? []).toString()) as string] : [];
      });
      return { patches, versionUpserts, memo, events: events.length };
    });
    // The release marker, where the six patches cost a fresh page ten events, and the one
    // patch since (D14); each with its version upsert.
    expect(byLine!.patches).toEqual([RELEASE_2026_12_PATCH, STATUS_IN_DATABASE_PATCH]);
    expect(byLine!.versionUpserts).toBe(2);
    // A page read in its segment activity, in one pass (P1) or line by line (P7), has no
    // recognize or polish stage, and is committed there (P6): no commit marker either.
    expect(byLine!.memo).toEqual(['segment', 'done']);
    expect(readOnce!.memo).toEqual(['segment', 'done']);
    expect(readOnce!.events).toBeLessThanOrEqual(18);
    expect(byLine!.events).toBeLessThanOrEqual(18);
  });

  it('D1 D5 kept key-fault histories replay: runs begun before the key-fault patch retry the step in place, runs since run the attempt again', async () => {
    const kept: Array<[file: string, reruns: boolean]> = [
      ['image-key-fault.json', true],
      ['image-key-fault-claim.json', true],
      ['image-key-fault-before-reruns.json', false],
    ];
    for (const [file, reruns] of kept) {
      const history = JSON.parse(readFileSync(join(HISTORY_FIXTURES, file), 'utf8')) as KeptHistory;
      expect(patchIdsOf(history).includes(KEY_FAULT_PATCH)).toBe(reruns);
      // Each met a key fault and paused a second before the step ran again.
      const timers = history.events.map((e) => e.timerStartedEventAttributes?.startToFireTimeout);
      expect(timers).toContain('1s');
      await expect(
        Worker.runReplayHistory(replayOptions(), history, file),
      ).resolves.toBeUndefined();
    }
  });
});
