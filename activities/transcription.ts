import { ApplicationFailure, Context } from '@temporalio/activity';
import { type Segment, segmentsOf } from '../core/annotation';
import { hashToken, newAttemptToken, sealToken, unsealToken } from '../core/attemptToken';
import {
  type FailureClass,
  isPausing,
  type PauseReason,
  ProviderError,
  STALE_ATTEMPT,
  StaleAttemptError,
} from '../core/failures';
import type { Logger } from '../core/logger';
import type { MediaKind } from '../core/media';
import type { CallContext, CallCost, JobSnapshot, LineBox, MediaInput } from '../core/provider';
import { redactError } from '../core/redact';
import {
  type AttemptFence,
  appendTaskEvent,
  type CheckpointStage,
  claimAttempt as claimAttemptRow,
  closeAttempt as closeAttemptRow,
  commitPageRevision,
  failOnConflict,
  loadCheckpoints,
  pauseProvider as pauseProviderRow,
  readRunningAttempt,
  recordProgress,
  refreshRecognizeProgress,
  saveCheckpoint,
  saveSegmentCheckpoint,
} from '../db/attempts';
import { scheduleBlobDeletion } from '../db/blobs';
import { checkBudget } from '../db/budget';
import { cancelJobIfActive } from '../db/jobs';
import { recordProviderCall } from '../db/ledger';
import type { Pool } from '../db/pool';
import type { ProviderRegistry } from '../providers/registry';

/**
 * The activities of the transcription workflow, made by a factory over injected
 * dependencies. Each business fact is written by one activity in one transaction, fenced by
 * the attempt token (A1). The workflow only ever holds the token sealed.
 */
export interface TranscriptionDeps {
  pool: Pool;
  providers: ProviderRegistry;
  secretKey: string;
  /** This worker's identity, recorded as the attempt owner. */
  owner: string;
  /** A local file path for a stored blob. */
  resolveMedia: (blobKey: string) => Promise<string>;
  logger: Logger;
  /** How often long activities heartbeat (a third of the heartbeat timeout is sensible). */
  heartbeatEveryMs: number;
  /** How often an audio engine job is polled. */
  audioPollMs?: number;
  /** Q4: told of the first pause of an episode (the notification is sent once per episode). */
  onProviderPaused?: (pause: {
    provider: string;
    reason: string;
    episode: number;
  }) => Promise<void>;
  /** Clock for budget days (B1); tests inject one. */
  now?: () => Date;
}

/** What the workflow holds of an attempt: never the clear token. */
export interface AttemptRef {
  jobId: string;
  attemptNumber: number;
  sealedToken: string;
}

export type ClaimOutcome =
  | {
      state: 'claimed';
      ref: AttemptRef;
      kind: MediaKind;
      chargedAttempts: number;
    }
  | { state: 'inactive'; status: string }
  | { state: 'paused'; reason: FailureClass; resumeAtMs: number | null }
  | { state: 'exhausted'; category: FailureClass };

/** How often a long recognition refreshes the job's live counters (the console reads them). */
const PROGRESS_EVERY_MS = 500;

export interface SegmentFailure {
  index: number;
  category: FailureClass;
}

export interface RecognizeOutcome {
  total: number;
  completed: number;
  /** Segments this call attempted that failed with a charged class (J2). */
  failures: SegmentFailure[];
  /** Segments not yet attempted in this attempt. */
  remaining: number;
  /** A pausing failure stopped the stage at once (Q3). */
  pause: PauseRequest | null;
}

export interface PauseRequest {
  reason: PauseReason;
  retryAfterMs: number | null;
  /** `workspace`: only this workspace's budget is spent; the provider stays open for others. */
  scope?: 'provider' | 'workspace';
}

function pauseFrom(error: ProviderError): PauseRequest {
  return {
    reason: error.category as PauseRequest['reason'],
    retryAfterMs: error.retryAfterMs ?? null,
    scope: error.scope,
  };
}

interface AttemptContext {
  fence: AttemptFence;
  workspaceId: number;
  pageId: number;
  snapshot: JobSnapshot;
  inputRevision: number;
}

export function createTranscriptionActivities(deps: TranscriptionDeps) {
  const { pool } = deps;

  function fenceOf(ref: AttemptRef): AttemptFence {
    let token: Buffer;
    try {
      token = unsealToken(ref.sealedToken, deps.secretKey);
    } catch {
      throw ApplicationFailure.create({
        type: STALE_ATTEMPT,
        message: 'attempt token does not open',
        nonRetryable: true,
      });
    }
    return { jobId: ref.jobId, attemptNumber: ref.attemptNumber, tokenHash: hashToken(token) };
  }

  async function attemptContext(ref: AttemptRef): Promise<AttemptContext> {
    const fence = fenceOf(ref);
    const row = await readRunningAttempt(pool, fence);
    return {
      fence,
      workspaceId: row.workspace_id,
      pageId: row.page_id,
      snapshot: row.snapshot,
      inputRevision: row.input_revision,
    };
  }

  async function pageMedia(
    pageId: number,
  ): Promise<{ media: MediaInput; annotationSegments: Segment[] }> {
    const { rows } = await pool.query(
      `SELECT blob_key, media_type, annotation_page FROM pages WHERE id = $1`,
      [pageId],
    );
    const page = rows[0];
    const path = page.blob_key ? await deps.resolveMedia(page.blob_key) : '';
    return {
      media: { path, mediaType: page.media_type ?? 'application/octet-stream' },
      annotationSegments: segmentsOf(page.annotation_page),
    };
  }

  function callContext(ctx: AttemptContext, op: string, segmentIndex?: number): CallContext {
    return {
      signal: Context.current().cancellationSignal,
      language: ctx.snapshot.language,
      model: ctx.snapshot.model,
      options: ctx.snapshot.options,
      callKey: `${ctx.fence.jobId}:${ctx.fence.attemptNumber}:${op}:${segmentIndex ?? ''}`,
      attemptNumber: ctx.fence.attemptNumber,
      segmentIndex,
    };
  }

  async function ledger(
    ctx: AttemptContext,
    operation: string,
    cost: CallCost | null,
    outcome: string,
  ) {
    await recordProviderCall(pool, {
      workspaceId: ctx.workspaceId,
      jobId: ctx.fence.jobId,
      attemptNumber: ctx.fence.attemptNumber,
      snapshot: ctx.snapshot,
      operation,
      cost,
      outcome,
      occurredAt: deps.now?.(),
    });
  }

  /**
   * A resume time on this worker's clock, expressed on the real clock the workflow's timers
   * run on (they differ only when a test injects a clock).
   */
  function onWorkflowClock(at: Date | null): number | null {
    if (at === null) return null;
    const now = deps.now?.() ?? new Date();
    return Date.now() + (at.getTime() - now.getTime());
  }

  /**
   * B1: a paid call is made only within the day's budget, estimated from the snapshot's
   * price for the call's unit. Free engines (price 0) never wait.
   */
  async function guardBudget(ctx: AttemptContext, cost: CallCost): Promise<void> {
    const estimatedMicros = Math.round(cost.units * (ctx.snapshot.price[cost.unit] ?? 0));
    if (estimatedMicros <= 0) return;
    const now = deps.now?.() ?? new Date();
    const check = await checkBudget(pool, {
      workspaceId: ctx.workspaceId,
      provider: ctx.snapshot.provider,
      estimatedMicros,
      now,
    });
    if (!check.ok) {
      throw new ProviderError(
        'budget',
        `daily ${check.exceeded} budget spent`,
        Math.max(1_000, check.resetsAt.getTime() - now.getTime()),
        check.exceeded === 'workspace' ? 'workspace' : 'provider',
      );
    }
  }

  /** Heartbeats on a timer while `work` runs: the heartbeat is the attempt's lease (T3). */
  async function withHeartbeat<T>(details: () => unknown, work: () => Promise<T>): Promise<T> {
    const context = Context.current();
    context.heartbeat(details());
    const timer = setInterval(() => context.heartbeat(details()), deps.heartbeatEveryMs);
    try {
      return await work();
    } finally {
      clearInterval(timer);
    }
  }

  /** Turns the errors of our own layers into workflow-visible failures; the rest pass through. */
  function asFailure(error: unknown, ctx?: AttemptContext): unknown {
    const signal = Context.current().cancellationSignal;
    if (signal.aborted) return signal.reason;
    if (error instanceof StaleAttemptError) {
      return ApplicationFailure.create({
        type: STALE_ATTEMPT,
        message: error.message,
        nonRetryable: true,
      });
    }
    if (error instanceof ProviderError) {
      deps.logger.warn(
        { jobId: ctx?.fence.jobId, attempt: ctx?.fence.attemptNumber, errorClass: error.category },
        'provider call failed',
      );
      return ApplicationFailure.create({
        type: error.category,
        message: redactError(error),
        nonRetryable: true,
        details: [{ retryAfterMs: error.retryAfterMs ?? null, scope: error.scope }],
      });
    }
    return error;
  }

  async function guarded<T>(ctx: AttemptContext | undefined, work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (error) {
      throw asFailure(error, ctx);
    }
  }

  function checkpointsBy(
    rows: Awaited<ReturnType<typeof loadCheckpoints>>,
    stage: CheckpointStage,
  ) {
    return new Map(rows.filter((r) => r.stage === stage).map((r) => [r.seq, r.payload]));
  }

  async function deleteEngineCopies(jobId: string): Promise<void> {
    const { rows } = await pool.query(
      `SELECT provider, engine_job_id FROM engine_jobs WHERE job_id = $1 AND deleted_at IS NULL`,
      [jobId],
    );
    for (const row of rows) {
      const provider = deps.providers.get(row.provider);
      await provider.deleteAudio(row.engine_job_id, {
        signal: new AbortController().signal,
        language: 'und',
        options: {},
        callKey: `${jobId}:cleanup`,
      });
      await pool.query(
        `UPDATE engine_jobs SET deleted_at = now() WHERE provider = $1 AND engine_job_id = $2`,
        [row.provider, row.engine_job_id],
      );
    }
  }

  return {
    /** A1: claims the next attempt; the clear token never leaves this function but sealed. */
    async claimAttempt(input: { jobId: string; maxAttempts: number }): Promise<ClaimOutcome> {
      const token = newAttemptToken();
      const claim = await claimAttemptRow(pool, {
        jobId: input.jobId,
        owner: deps.owner,
        tokenHash: hashToken(token),
        maxAttempts: input.maxAttempts,
        now: deps.now?.(),
      });
      switch (claim.state) {
        case 'claimed':
          deps.logger.info({ jobId: input.jobId, attempt: claim.attemptNumber }, 'attempt claimed');
          return {
            state: 'claimed',
            ref: {
              jobId: input.jobId,
              attemptNumber: claim.attemptNumber,
              sealedToken: sealToken(token, deps.secretKey),
            },
            kind: claim.kind,
            chargedAttempts: claim.chargedAttempts,
          };
        case 'paused':
          return {
            state: 'paused',
            reason: claim.reason,
            resumeAtMs: onWorkflowClock(claim.resumeAt),
          };
        default:
          return claim;
      }
    },

    /** T2 `segment`: finds the lines of an image page, unless a checkpoint or the page has them. */
    async segmentPage(ref: AttemptRef): Promise<{ total: number }> {
      const ctx = await guarded(undefined, () => attemptContext(ref));
      return guarded(ctx, async () => {
        const saved = await loadCheckpoints(pool, ref.jobId, 'segment');
        if (saved[0]) return { total: (saved[0].payload as { lines: LineBox[] }).lines.length };
        const { media, annotationSegments } = await pageMedia(ctx.pageId);
        let lines: LineBox[] = annotationSegments.flatMap((s) =>
          s.target.kind === 'xywh' ? [{ box: s.target.box }] : [],
        );
        if (lines.length === 0) {
          const provider = deps.providers.get(ctx.snapshot.provider);
          await guardBudget(ctx, { units: 1, unit: 'page' });
          const result = await withHeartbeat(
            () => ({ stage: 'segment' }),
            () => provider.segmentPage(media, callContext(ctx, 'segment')),
          );
          await ledger(ctx, 'segment', result.cost, 'ok');
          lines = result.lines;
        }
        await saveCheckpoint(pool, ctx.fence, 'segment', 0, { lines }, async (client) => {
          await client.query(
            `UPDATE transcription_jobs SET stage = 'recognize', total_segments = $2, updated_at = now() WHERE id = $1`,
            [ref.jobId, lines.length],
          );
        });
        return { total: lines.length };
      });
    },

    /**
     * T2 `recognize` for image pages: recognizes up to `maxSegments` lines not yet
     * checkpointed, for at most about `maxMillis`, saving each line's text before going on.
     * A pausing failure stops at once; a charged failure marks that line failed for this
     * attempt (J2). Bounding by time keeps the workflow's view of progress fresh and a
     * drain short, whatever the engine's speed, with few activities per page.
     */
    async recognizeSegments(
      ref: AttemptRef,
      args: { maxSegments: number; skip: number[]; maxMillis?: number },
    ): Promise<RecognizeOutcome> {
      const ctx = await guarded(undefined, () => attemptContext(ref));
      return guarded(ctx, async () => {
        const saved = await loadCheckpoints(pool, ref.jobId);
        const lines = (checkpointsBy(saved, 'segment').get(0) as { lines: LineBox[] } | undefined)
          ?.lines;
        if (!lines) throw new Error('recognize ran before segment was checkpointed');
        const done = checkpointsBy(saved, 'recognize');
        const skip = new Set(args.skip);
        const todo = lines.map((_, i) => i).filter((i) => !done.has(i) && !skip.has(i));
        const batch = todo.slice(0, args.maxSegments);
        const { media } = await pageMedia(ctx.pageId);
        const provider = deps.providers.get(ctx.snapshot.provider);
        const failures: SegmentFailure[] = [];
        let completed = done.size;
        let pause: RecognizeOutcome['pause'] = null;
        let progressAt = Date.now();
        const startedAt = Date.now();
        let tried = 0;
        const previews: Array<{ index: number; text: string }> = [];
        if (batch.length > 0) {
          await appendTaskEvent(pool, ctx.fence, 'started', {
            segments: batch,
            totalSegments: lines.length,
          });
        }
        await withHeartbeat(
          () => ({ stage: 'recognize', completed, total: lines.length }),
          async () => {
            for (const index of batch) {
              if (args.maxMillis && tried > 0 && Date.now() - startedAt >= args.maxMillis) break;
              try {
                const line = lines[index]!;
                await guardBudget(ctx, { units: 1, unit: 'line' });
                const result = await provider.recognizeLine(
                  media,
                  line,
                  callContext(ctx, 'recognize', index),
                );
                // Saved before the next line starts: a new attempt resumes after it (T2).
                await saveSegmentCheckpoint(
                  pool,
                  ctx.fence,
                  index,
                  { text: result.text, confidence: result.confidence ?? null },
                  {
                    workspaceId: ctx.workspaceId,
                    provider: ctx.snapshot.provider,
                    units: result.cost.units,
                    unit: result.cost.unit,
                    costMicros: Math.round(
                      result.cost.units * (ctx.snapshot.price[result.cost.unit] ?? 0),
                    ),
                    occurredAt: deps.now?.(),
                  },
                );
                completed += 1;
                tried += 1;
                previews.push({ index, text: result.text });
                if (Date.now() - progressAt >= PROGRESS_EVERY_MS) {
                  progressAt = Date.now();
                  await refreshRecognizeProgress(pool, ref.jobId);
                }
              } catch (error) {
                if (
                  !(error instanceof ProviderError) ||
                  Context.current().cancellationSignal.aborted
                )
                  throw error;
                await ledger(ctx, 'recognize', null, error.category);
                deps.logger.warn(
                  {
                    jobId: ref.jobId,
                    attempt: ref.attemptNumber,
                    segment: index,
                    errorClass: error.category,
                  },
                  'segment failed',
                );
                if (isPausing(error.category)) {
                  pause = pauseFrom(error);
                  return;
                }
                failures.push({ index, category: error.category });
                tried += 1;
              }
            }
          },
        );
        await refreshRecognizeProgress(pool, ref.jobId);
        if (tried > 0) {
          // A preview of this slice's lines: transient, not the canonical transcript.
          await appendTaskEvent(pool, ctx.fence, 'completed', {
            segments: previews,
            failed: failures.map((f) => ({ index: f.index, errorCategory: f.category })),
            completedSegments: completed,
            failedSegments: failures.length,
            totalSegments: lines.length,
          });
        }
        return {
          total: lines.length,
          completed,
          failures,
          remaining: todo.length - tried,
          pause,
        };
      });
    },

    /**
     * T2 `submit` for audio: hands the recording to the engine and saves the engine job id
     * before anything else, because once the engine holds it our own copy may be deleted.
     */
    async submitAudio(ref: AttemptRef): Promise<{ engineJobId: string }> {
      const ctx = await guarded(undefined, () => attemptContext(ref));
      return guarded(ctx, async () => {
        const saved = await loadCheckpoints(pool, ref.jobId, 'submit');
        if (saved[0]) return saved[0].payload as { engineJobId: string };
        const { media } = await pageMedia(ctx.pageId);
        const provider = deps.providers.get(ctx.snapshot.provider);
        const durationMs = (
          await pool.query('SELECT duration_ms FROM pages WHERE id = $1', [ctx.pageId])
        ).rows[0]?.duration_ms as number | null;
        await guardBudget(ctx, {
          units: Math.max(1, Math.ceil((durationMs ?? 0) / 1000)),
          unit: 'audio_second',
        });
        const result = await withHeartbeat(
          () => ({ stage: 'submit' }),
          () => provider.submitAudio(media, callContext(ctx, 'submit')),
        );
        await saveCheckpoint(
          pool,
          ctx.fence,
          'submit',
          0,
          { engineJobId: result.engineJobId },
          async (client, inserted) => {
            if (!inserted) return;
            await client.query(
              `INSERT INTO engine_jobs (provider, engine_job_id, job_id) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`,
              [ctx.snapshot.provider, result.engineJobId, ref.jobId],
            );
            await client.query(
              `UPDATE transcription_jobs SET stage = 'recognize', updated_at = now() WHERE id = $1`,
              [ref.jobId],
            );
            // T2/U3: the engine holds the recording and its job id is saved in this very
            // transaction, so our copy is released now (patient audio stays no longer than it
            // must); the cleanup deletes it, fenced against new references.
            const released = await client.query(
              `UPDATE pages p SET blob_key = NULL, updated_at = now()
                 FROM pages old WHERE p.id = old.id AND p.id = $1 AND old.blob_key IS NOT NULL
               RETURNING old.blob_key AS key`,
              [ctx.pageId],
            );
            if (released.rows[0]) {
              await scheduleBlobDeletion(client, ctx.workspaceId, released.rows[0].key);
            }
          },
        );
        await ledger(ctx, 'submit', result.cost, 'ok');
        return { engineJobId: result.engineJobId };
      });
    },

    /**
     * T2 `recognize` for audio: polls the engine until done, saves the raw segments as a
     * checkpoint, and only then deletes the engine's copy: the checkpoint is the last copy.
     */
    async awaitAudio(ref: AttemptRef): Promise<RecognizeOutcome> {
      const ctx = await guarded(undefined, () => attemptContext(ref));
      return guarded(ctx, async () => {
        const saved = await loadCheckpoints(pool, ref.jobId);
        const existing = checkpointsBy(saved, 'recognize').get(0) as
          | { segments: Segment[] }
          | undefined;
        if (existing) {
          const n = existing.segments.length;
          return { total: n, completed: n, failures: [], remaining: 0, pause: null };
        }
        const submitted = checkpointsBy(saved, 'submit').get(0) as
          | { engineJobId: string }
          | undefined;
        if (!submitted) throw new Error('recognize ran before submit was checkpointed');
        const provider = deps.providers.get(ctx.snapshot.provider);
        const signal = Context.current().cancellationSignal;
        try {
          let progress = 0;
          const segments = await withHeartbeat(
            () => ({ stage: 'recognize', progress }),
            async () => {
              for (;;) {
                const poll = await provider.pollAudio(
                  submitted.engineJobId,
                  callContext(ctx, 'poll'),
                );
                if (poll.state === 'done') {
                  await ledger(ctx, 'transcribe', poll.cost, 'ok');
                  return poll.segments;
                }
                progress = poll.progress ?? progress;
                await sleepUnlessAborted(deps.audioPollMs ?? 1_000, signal);
              }
            },
          );
          await saveCheckpoint(pool, ctx.fence, 'recognize', 0, { segments }, async (client) => {
            await client.query(
              `UPDATE transcription_jobs SET completed_segments = $2, total_segments = $2, updated_at = now() WHERE id = $1`,
              [ref.jobId, segments.length],
            );
          });
          await provider.deleteAudio(submitted.engineJobId, callContext(ctx, 'delete'));
          await pool.query(
            `UPDATE engine_jobs SET deleted_at = now() WHERE provider = $1 AND engine_job_id = $2 AND deleted_at IS NULL`,
            [ctx.snapshot.provider, submitted.engineJobId],
          );
          return {
            total: segments.length,
            completed: segments.length,
            failures: [],
            remaining: 0,
            pause: null,
          };
        } catch (error) {
          if (error instanceof ProviderError && isPausing(error.category) && !signal.aborted) {
            return {
              total: 0,
              completed: 0,
              failures: [],
              remaining: 1,
              pause: pauseFrom(error),
            };
          }
          throw error;
        }
      });
    },

    /**
     * J5 cleanup after the workflow was cancelled: records the cancel if it did not come
     * through the database first, and deletes any engine copy of the recording.
     */
    async cancelCleanup(input: {
      jobId: string;
      attemptNumber: number | null;
    }): Promise<{ jobStatus: string }> {
      const jobStatus = await cancelJobIfActive(pool, input.jobId);
      await deleteEngineCopies(input.jobId);
      deps.logger.info(
        { jobId: input.jobId, attempt: input.attemptNumber, status: jobStatus },
        'job stopped',
      );
      return { jobStatus };
    },

    /** T2 `polish`: one pass over the recognized text; saved before the commit reads it. */
    async polishSegments(ref: AttemptRef): Promise<{ polished: boolean }> {
      const ctx = await guarded(undefined, () => attemptContext(ref));
      return guarded(ctx, async () => {
        const saved = await loadCheckpoints(pool, ref.jobId);
        if (checkpointsBy(saved, 'polish').has(0)) return { polished: true };
        const recognized = recognizedSegments(saved);
        if (recognized.length === 0) return { polished: false };
        const { kind } = await pageKind(pool, ctx.pageId);
        // The engine's own (offline, deterministic) polish, or a model pass through another
        // provider named in the job's options, e.g. `{ polishProvider: "openai-chat" }`.
        const polishWith = ctx.snapshot.options.polishProvider;
        const provider = deps.providers.get(
          typeof polishWith === 'string' ? polishWith : ctx.snapshot.provider,
        );
        const raw = recognized.map((s) => s.text.replace(/\n/g, ' ')).join('\n');
        await recordProgress(pool, ctx.fence, { stage: 'polish' });
        await guardBudget(ctx, { units: 1, unit: 'call' });
        const result = await withHeartbeat(
          () => ({ stage: 'polish' }),
          () => provider.polish(raw, kind, callContext(ctx, 'polish')),
        );
        await ledger(ctx, 'polish', result.cost, 'ok');
        const lines = result.text.split('\n');
        // A polish that changes the number of lines cannot be mapped back to segments.
        if (lines.length !== recognized.length) return { polished: false };
        const texts = Object.fromEntries(recognized.map((s, i) => [s.index, lines[i]!]));
        await saveCheckpoint(pool, ctx.fence, 'polish', 0, { texts });
        return { polished: true };
      });
    },

    /**
     * J1 + J2: builds the transcript from the checkpoints (failed segments keep their
     * previous text) and commits it in one transaction. A CAS miss fails the job `conflict`.
     */
    async commitTranscript(
      ref: AttemptRef,
      args: { usePolish: boolean },
    ): Promise<{ state: 'committed'; revision: number } | { state: 'conflict' }> {
      const ctx = await guarded(undefined, () => attemptContext(ref));
      return guarded(ctx, async () => {
        const saved = await loadCheckpoints(pool, ref.jobId);
        const { annotationSegments } = await pageMedia(ctx.pageId);
        const previous = new Map(annotationSegments.map((s) => [s.index, s]));
        const polished = args.usePolish
          ? ((
              checkpointsBy(saved, 'polish').get(0) as { texts: Record<string, string> } | undefined
            )?.texts ?? {})
          : {};
        const recognized = new Map(recognizedSegments(saved).map((s) => [s.index, s]));
        const lines = (checkpointsBy(saved, 'segment').get(0) as { lines: LineBox[] } | undefined)
          ?.lines;
        let segments: Segment[];
        let completed: number;
        let total: number;
        if (lines) {
          total = lines.length;
          completed = recognized.size;
          segments = lines.map((line, index) => {
            const got = recognized.get(index);
            const text = got ? (polished[index] ?? got.text) : (previous.get(index)?.text ?? '');
            const segment: Segment = { index, target: { kind: 'xywh', box: line.box }, text };
            if (got?.confidence != null) segment.confidence = got.confidence;
            return segment;
          });
        } else {
          segments = [...recognized.values()].map((s) => ({
            ...s,
            text: polished[s.index] ?? s.text,
          }));
          total = segments.length;
          completed = segments.length;
        }
        const provider = deps.providers.get(ctx.snapshot.provider);
        const result = await commitPageRevision(pool, ctx.fence, {
          segments,
          completed,
          failed: total - completed,
          total,
          engine: provider.identity(
            ctx.snapshot.model === 'default' ? undefined : ctx.snapshot.model,
          ),
        });
        if (result.state === 'conflict') {
          await failOnConflict(pool, ctx.fence, result.currentRevision);
          deps.logger.warn(
            { jobId: ref.jobId, attempt: ref.attemptNumber, errorClass: 'conflict' },
            'page changed',
          );
          return { state: 'conflict' };
        }
        deps.logger.info(
          {
            jobId: ref.jobId,
            attempt: ref.attemptNumber,
            revision: result.revision,
            completed,
            total,
          },
          'transcript committed',
        );
        return { state: 'committed', revision: result.revision };
      });
    },

    /** Closes an attempt that commits nothing (retryable, permanent failure, or canceled). */
    async closeAttempt(
      ref: AttemptRef,
      args: {
        outcome: 'retryable_failed' | 'failed' | 'canceled';
        category: FailureClass | null;
        detail: string | null;
        counts?: { completed: number; failed: number; total: number | null };
        maxAttempts: number;
      },
    ): Promise<{ jobStatus: string }> {
      const fence = fenceOf(ref);
      return guarded(undefined, async () => {
        const result = await closeAttemptRow(
          pool,
          fence,
          {
            outcome: args.outcome,
            category: args.category,
            detail: args.detail,
            counts: args.counts,
          },
          args.maxAttempts,
        );
        deps.logger.info(
          {
            jobId: ref.jobId,
            attempt: ref.attemptNumber,
            outcome: args.outcome,
            errorClass: args.category,
          },
          'attempt closed',
        );
        return result;
      });
    },

    /** Q3: refunds the attempt and pauses the provider's queue; returns when it may reopen. */
    async pauseProvider(
      ref: AttemptRef,
      args: PauseRequest & { counts?: { completed: number; failed: number; total: number | null } },
    ): Promise<{ resumeAtMs: number | null; episode: number; newEpisode: boolean }> {
      const ctx = await guarded(undefined, () => attemptContext(ref));
      return guarded(ctx, async () => {
        const paused = await pauseProviderRow(pool, ctx.fence, {
          provider: ctx.snapshot.provider,
          reason: args.reason,
          detail: `provider ${ctx.snapshot.provider} paused: ${args.reason}`,
          retryAfterMs: args.retryAfterMs ?? undefined,
          counts: args.counts,
          scope: args.scope,
          now: deps.now?.(),
        });
        if (paused.newEpisode) {
          await deps
            .onProviderPaused?.({
              provider: ctx.snapshot.provider,
              reason: args.reason,
              episode: paused.episode,
            })
            .catch(() => {});
        }
        deps.logger.warn(
          {
            jobId: ref.jobId,
            provider: ctx.snapshot.provider,
            errorClass: args.reason,
            episode: paused.episode,
          },
          'provider paused',
        );
        return {
          resumeAtMs: onWorkflowClock(paused.resumeAt),
          episode: paused.episode,
          newEpisode: paused.newEpisode,
        };
      });
    },

    /** Records the workflow's current stage on the job row (fenced), for the console. */
    async recordStage(ref: AttemptRef, stage: string): Promise<void> {
      const fence = fenceOf(ref);
      await guarded(undefined, () => recordProgress(pool, fence, { stage }));
    },
  };
}

export type TranscriptionActivities = ReturnType<typeof createTranscriptionActivities>;

function recognizedSegments(saved: Awaited<ReturnType<typeof loadCheckpoints>>): Segment[] {
  const out: Segment[] = [];
  for (const row of saved) {
    if (row.stage !== 'recognize') continue;
    const payload = row.payload as {
      text?: string;
      confidence?: number | null;
      segments?: Segment[];
    };
    if (payload.segments) {
      out.push(...payload.segments);
    } else {
      const segment: Segment = {
        index: row.seq,
        target: { kind: 'xywh', box: { x: 0, y: 0, w: 0, h: 0 } },
        text: payload.text ?? '',
      };
      if (payload.confidence != null) segment.confidence = payload.confidence;
      out.push(segment);
    }
  }
  return out.sort((a, b) => a.index - b.index);
}

async function pageKind(pool: Pool, pageId: number): Promise<{ kind: MediaKind }> {
  const { rows } = await pool.query('SELECT kind FROM pages WHERE id = $1', [pageId]);
  return { kind: rows[0].kind };
}

function sleepUnlessAborted(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
