import { ApplicationFailure, CancelledFailure, Context } from '@temporalio/activity';
import { isMissingObject } from '../blobs/store';
import { hashToken, unsealToken } from '../core/attemptToken';
import {
  CONFIG_MISMATCH,
  type FailureClass,
  INFRASTRUCTURE_FAULT,
  InfrastructureFaultError,
  isInfrastructureError,
  type PauseReason,
  ProviderError,
  STALE_ATTEMPT,
  StaleAttemptError,
} from '../core/failures';
import type { Logger } from '../core/logger';
import { type BilledProvider, billedProvider, costMicros } from '../core/pricing';
import type { CallContext, CallCost, JobSnapshot, MediaInput } from '../core/provider';
import { redactError } from '../core/redact';
import { KEY_MISMATCH, openWithAnyKey, SecretKeyMismatchError } from '../core/secretKeys';
import { isInteractiveTaskQueue, PRIORITY_KEYS } from '../core/temporal';
import { type AttemptStepOutcome, recordAttemptStep } from '../db/attemptSteps';
import { blobIsLive } from '../db/blobs';
import { checkBudget } from '../db/budget';
import { type AttemptFence, readRunningAttempt } from '../db/fence';
import { installationKeyHeld } from '../db/installationKey';
import { recordProviderCall } from '../db/ledger';
import { readAttemptPage } from '../db/pages';
import type { Pool } from '../db/pool';
import type { ProviderRegistry } from '../providers/registry';
import { InteractiveGate } from './interactiveGate';
import { PagesInHand } from './pagesInHand';

/**
 * What every transcription activity shares: the attempt's fence and context, the engine's
 * call context, the budget guard (B1), the ledger, the heartbeat (T3), and the one mapping of
 * errors to the failures the workflow branches on (Q3).
 */
export interface TranscriptionDeps {
  pool: Pool;
  providers: ProviderRegistry;
  /** D1: seals the attempt tokens this worker claims (the installation's newest key). */
  secretKey: string;
  /** D1: every key that opens a sealed token, newest first; default: `secretKey` alone. */
  openingKeys?: readonly string[];
  /** This worker's identity, recorded as the attempt owner. */
  owner: string;
  /** A local file path for a stored blob. */
  resolveMedia: (blobKey: string) => Promise<string>;
  logger: Logger;
  /** How often long activities heartbeat (a third of the heartbeat timeout is sensible). */
  heartbeatEveryMs: number;
  /**
   * D7: how long finished engine work waits, heartbeating, for PostgreSQL or the object store
   * to take it before the step gives up (uncharged); default 3 minutes.
   */
  infraWaitMs?: number;
  /** How often an audio engine job is polled. */
  audioPollMs?: number;
  /** Q4: told of the first pause of an episode (the notification is sent once per episode). */
  onProviderPaused?: (pause: {
    provider: string;
    /** M3: the workspace whose own credentials paused; null for the installation's. */
    workspaceId: number | null;
    reason: PauseReason;
    episode: number;
  }) => Promise<void>;
  /** Clock for budget days (B1); tests inject one. */
  now?: () => Date;
  /**
   * D1: told when this worker finds it does not hold the installation's key (another key's
   * token reached it, or it was about to claim): the worker stops taking work.
   */
  onFleetKeyMismatch?: () => void;
  /**
   * D8: told when this worker cannot read an object the installation wrote (its blob store
   * is not the fleet's): the worker stops taking work.
   */
  onConfigurationFault?: (setting: string) => void;
  /**
   * M5: the process's pages in hand, which its bulk worker's workflow task slots read
   * (`worker/workflowTaskSlots.ts`); default: the kit's own, read by nothing else.
   */
  pagesInHand?: PagesInHand;
}

/** What the workflow holds of an attempt: never the clear token. */
export interface AttemptRef {
  jobId: string;
  attemptNumber: number;
  sealedToken: string;
}

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
  /** M3: the stage whose call failed; `polish` pauses the polish provider, not the job's own. */
  stage?: 'engine' | 'polish';
}

export function pauseFrom(error: ProviderError): PauseRequest {
  return {
    reason: error.category as PauseRequest['reason'],
    retryAfterMs: error.retryAfterMs ?? null,
    scope: error.scope,
  };
}

export interface AttemptContext {
  fence: AttemptFence;
  workspaceId: number;
  pageId: number;
  snapshot: JobSnapshot;
  inputRevision: number;
}

/**
 * The workflow's activity profiles (workflows/activityProfiles.ts): an `engine` activity runs
 * once per attempt, its failure ends the attempt; a `db` activity is a short idempotent write
 * that Temporal retries through transient errors (a Postgres restart).
 */
export type ActivityProfile = 'engine' | 'db';

export function createAttemptKit(deps: TranscriptionDeps) {
  const { pool } = deps;

  const openingKeys = deps.openingKeys?.length ? deps.openingKeys : [deps.secretKey];
  // P8: one per kit; a worker process's two Temporal workers share the kit's activities.
  const gate = new InteractiveGate();
  const hand = deps.pagesInHand ?? new PagesInHand();

  /**
   * D1: a token no key of this worker opens was sealed by a process with another key: a
   * fault of the fleet's configuration, not of the attempt. It is raised as its own type,
   * which the workflow neither charges nor takes for a dead token: it waits and runs the
   * step again, on whichever worker holds the key (the attempt stays running meanwhile).
   */
  function fenceOf(ref: AttemptRef): AttemptFence {
    let token: Buffer;
    try {
      token = openWithAnyKey(openingKeys, (key) => unsealToken(ref.sealedToken, key));
    } catch (error) {
      if (!(error instanceof SecretKeyMismatchError)) throw error;
      deps.logger.error(
        { jobId: ref.jobId, attempt: ref.attemptNumber, errorClass: KEY_MISMATCH },
        "attempt token does not open with this worker's QUIRE_SECRET_KEY: the fleet runs with different keys",
      );
      throw ApplicationFailure.create({
        type: KEY_MISMATCH,
        message: error.message,
        nonRetryable: true,
      });
    }
    return { jobId: ref.jobId, attemptNumber: ref.attemptNumber, tokenHash: hashToken(token) };
  }

  /**
   * D1: whether this worker holds the installation's current key, asked of PostgreSQL at
   * most once a minute while it does. A worker that does not (a key that never was, or one
   * rotated away) would seal tokens the fleet cannot open and fail on every token the fleet
   * sealed: it claims nothing more, says so, and stops taking work. Nothing recorded yet
   * (a fleet's first start) is no mismatch.
   */
  let keyHeldUntil = 0;
  async function assertFleetKey(): Promise<void> {
    if (Date.now() < keyHeldUntil) return;
    if ((await installationKeyHeld(pool, openingKeys)) !== false) {
      keyHeldUntil = Date.now() + 60_000;
      return;
    }
    deps.logger.error(
      { errorClass: KEY_MISMATCH },
      "this worker does not hold the installation's QUIRE_SECRET_KEY: it takes no more work",
    );
    deps.onFleetKeyMismatch?.();
    throw ApplicationFailure.create({
      type: KEY_MISMATCH,
      message: "this worker does not hold the installation's QUIRE_SECRET_KEY",
      nonRetryable: true,
    });
  }

  async function attemptContext(ref: AttemptRef): Promise<AttemptContext> {
    let fence: AttemptFence;
    try {
      fence = fenceOf(ref);
    } catch (error) {
      // A token no key of ours opens: find out whether the fault is this worker's.
      if (error instanceof ApplicationFailure && error.type === KEY_MISMATCH)
        await assertFleetKey();
      throw error;
    }
    const row = await readRunningAttempt(pool, fence);
    return {
      fence,
      workspaceId: row.workspace_id,
      pageId: row.page_id,
      snapshot: row.snapshot,
      inputRevision: row.input_revision,
    };
  }

  /** The page with its media as an engine reads it: a local file. */
  async function pageMedia(pageId: number) {
    const page = await readAttemptPage(pool, pageId);
    const media: MediaInput = {
      path: page.blobKey ? await mediaPath(page.blobKey) : '',
      mediaType: page.mediaType ?? 'application/octet-stream',
    };
    return { media, page };
  }

  /**
   * D8: an object the installation holds that this worker's store says is not there means
   * this worker is configured with another store: nothing is charged, the worker stops
   * taking work, and the step runs again on a worker that can read it.
   */
  async function mediaPath(blobKey: string): Promise<string> {
    try {
      return await deps.resolveMedia(blobKey);
    } catch (error) {
      if (!isMissingObject(error) || !(await blobIsLive(pool, blobKey))) throw error;
      const setting = 'QUIRE_BLOB_STORE / QUIRE_BLOB_DIR / QUIRE_S3_*';
      deps.logger.error(
        { errorClass: CONFIG_MISMATCH, setting },
        "this worker cannot read an object the installation wrote: its blob store is not the fleet's; it takes no more work",
      );
      deps.onConfigurationFault?.(setting);
      throw ApplicationFailure.create({
        type: CONFIG_MISMATCH,
        message: `an object the installation wrote is missing from this worker's blob store (${setting})`,
        nonRetryable: true,
      });
    }
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
      interactive: personWaits(),
    };
  }

  async function ledger(
    ctx: AttemptContext,
    operation: string,
    cost: CallCost | null,
    outcome: string,
    by?: BilledProvider,
  ) {
    await recordProviderCall(pool, {
      by: by ?? billedProvider(ctx.snapshot, 'engine'),
      workspaceId: ctx.workspaceId,
      jobId: ctx.fence.jobId,
      attemptNumber: ctx.fence.attemptNumber,
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
  async function guardBudget(
    ctx: AttemptContext,
    cost: CallCost,
    by: BilledProvider = billedProvider(ctx.snapshot, 'engine'),
  ): Promise<void> {
    const estimatedMicros = costMicros(by.price, cost);
    if (estimatedMicros <= 0) return;
    const now = deps.now?.() ?? new Date();
    const check = await checkBudget(pool, {
      workspaceId: ctx.workspaceId,
      provider: by.provider,
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

  /**
   * D7: runs `save` (the write of engine work already done: a read page, a recognized line)
   * until Quire's own PostgreSQL or object store takes it. While they do not answer, the step
   * heartbeats and waits (250 ms doubling to 1 s between tries: a refused connection costs
   * nothing, and the save should land the moment the database is back), for at most
   * `infraWaitMs`; then it gives up with an `InfrastructureFault`, which charges nothing. A
   * cancel does not stop the wait: a Temporal server back from the same outage may have timed
   * the step out meanwhile, and the work is still worth saving; the fence refuses the save if
   * the attempt ended. Any other error passes at once.
   */
  async function untilSaved<T>(what: string, save: () => Promise<T>): Promise<T> {
    const deadline = Date.now() + (deps.infraWaitMs ?? 180_000);
    for (let tries = 0; ; tries++) {
      try {
        return await save();
      } catch (error) {
        if (!isInfrastructureError(error)) throw error;
        if (Date.now() >= deadline) {
          throw new InfrastructureFaultError(
            'postgres',
            `${what}: Quire's own database or object store did not answer in time`,
          );
        }
        if (tries === 0) {
          deps.logger.warn(
            { errorClass: INFRASTRUCTURE_FAULT, step: what },
            'infrastructure unavailable: the finished work waits to be saved',
          );
        }
      }
      Context.current().heartbeat({ waiting: 'infrastructure', step: what, at: Date.now() });
      await new Promise((resolve) => setTimeout(resolve, Math.min(1_000, 250 * 2 ** tries)));
    }
  }

  /**
   * D7/D9: records that this engine step ran to its end on this worker (best effort for a
   * failed step; a finished one waits for the database like any finished work).
   */
  async function recordStep(ctx: AttemptContext, outcome: AttemptStepOutcome): Promise<void> {
    const info = Context.current().info;
    const row = {
      runId: info.workflowExecution?.runId ?? '',
      activityId: info.activityId,
      jobId: ctx.fence.jobId,
      attemptNumber: ctx.fence.attemptNumber,
      step: info.activityType,
      worker: deps.owner,
      outcome,
    };
    if (outcome === 'completed')
      await untilSaved('record step', () => recordAttemptStep(pool, row));
    else await recordAttemptStep(pool, row).catch(() => {});
  }

  /** Heartbeats on a timer while `work` runs: the heartbeat is the attempt's lease (T3). */
  async function withHeartbeat<T>(
    details: () => Record<string, unknown>,
    work: () => Promise<T>,
  ): Promise<T> {
    const context = Context.current();
    // D7: `at`, this worker's clock, tells the workflow a dead worker's timeout from one the
    // Temporal server reported late because it had been away itself.
    const beat = () => context.heartbeat({ ...details(), at: Date.now() });
    beat();
    const timer = setInterval(beat, deps.heartbeatEveryMs);
    try {
      return await work();
    } finally {
      clearInterval(timer);
    }
  }

  /**
   * The activity boundary: every error leaves as a failure the workflow branches on (Q3).
   * Cancellation and failures already made pass through as they are.
   */
  function asFailure(error: unknown, profile: ActivityProfile, ctx?: AttemptContext): unknown {
    const signal = Context.current().cancellationSignal;
    if (signal.aborted) return signal.reason;
    if (error instanceof ApplicationFailure || error instanceof CancelledFailure) return error;
    if (error instanceof StaleAttemptError) {
      return ApplicationFailure.create({
        type: STALE_ATTEMPT,
        message: error.message,
        nonRetryable: true,
      });
    }
    const log = { jobId: ctx?.fence.jobId, attempt: ctx?.fence.attemptNumber };
    // D7: Quire's own infrastructure did not answer: never charged. A `db` step stays
    // retryable (Temporal carries it through the outage); an engine step ends, and the
    // workflow runs the same attempt again once the dependency is back.
    if (error instanceof InfrastructureFaultError || isInfrastructureError(error)) {
      deps.logger.warn(
        { ...log, errorClass: INFRASTRUCTURE_FAULT },
        'infrastructure unavailable: step stopped, nothing charged',
      );
      return ApplicationFailure.create({
        type: INFRASTRUCTURE_FAULT,
        message: redactError(error),
        nonRetryable: profile === 'engine',
      });
    }
    if (error instanceof ProviderError) {
      deps.logger.warn({ ...log, errorClass: error.category }, 'provider call failed');
      return ApplicationFailure.create({
        type: error.category,
        message: redactError(error),
        nonRetryable: true,
        details: [{ retryAfterMs: error.retryAfterMs ?? null, scope: error.scope }],
      });
    }
    // Q3/J3: any other error is a fault on our side (a provider this worker does not have, a
    // bug, a lost connection): class `internal`, charged, then backoff and the next attempt.
    // Passed through unclassified, the workflow would take it for an interrupted attempt and
    // charge it `crashed` at the next claim. A `db` step stays retryable so that Temporal
    // still carries it through a Postgres restart.
    const message = redactError(error);
    deps.logger.warn({ ...log, errorClass: 'internal', error: message }, 'activity failed');
    return ApplicationFailure.create({
      type: 'internal' satisfies FailureClass,
      message,
      nonRetryable: profile === 'engine',
    });
  }

  async function guarded<T>(
    profile: ActivityProfile,
    ctx: AttemptContext | undefined,
    work: () => Promise<T>,
  ): Promise<T> {
    try {
      return await (personWaits() ? gate.holding(work) : work());
    } catch (error) {
      throw asFailure(error, profile, ctx);
    }
  }

  /**
   * P8: a bulk step about to start (a claim, an engine step) makes way for a person's page
   * running in this process: it waits while one does, bounded (`InteractiveGate`).
   */
  async function makeWay(onWait: () => void = () => {}): Promise<void> {
    if (personWaits()) return;
    await gate.cleared(Context.current().cancellationSignal, onWait);
  }

  /**
   * P8: whether this step is for a page a person waits for: its priority key (activities
   * inherit the workflow's), or its task queue (a local activity carries no priority).
   */
  function personWaits(): boolean {
    const info = Context.current().info;
    return (
      info.priority?.priorityKey === PRIORITY_KEYS.interactive ||
      isInteractiveTaskQueue(info.taskQueue)
    );
  }

  /** Runs an activity of the attempt `ref` behind the boundary, with its context read first. */
  async function withAttempt<T>(
    profile: ActivityProfile,
    ref: AttemptRef,
    work: (ctx: AttemptContext) => Promise<T>,
  ): Promise<T> {
    hand.touch(ref.jobId);
    // D7: the first heartbeat at once, so that a step cut off before its work began still
    // tells the workflow when it was last alive.
    if (profile === 'engine') {
      const context = Context.current();
      context.heartbeat({ at: Date.now() });
      await makeWay(() => context.heartbeat({ waiting: 'interactive', at: Date.now() }));
    }
    const ctx = await guarded(profile, undefined, () => attemptContext(ref));
    if (profile !== 'engine') return guarded(profile, ctx, () => work(ctx));
    return guarded(profile, ctx, async () => {
      let result: T;
      try {
        result = await work(ctx);
      } catch (error) {
        if (error instanceof ProviderError) await recordStep(ctx, 'failed');
        throw error;
      }
      await recordStep(ctx, 'completed');
      return result;
    });
  }

  return {
    deps,
    pool,
    fenceOf,
    assertFleetKey,
    pageMedia,
    callContext,
    ledger,
    onWorkflowClock,
    guardBudget,
    makeWay,
    hand,
    withHeartbeat,
    untilSaved,
    guarded,
    withAttempt,
  };
}

export type AttemptKit = ReturnType<typeof createAttemptKit>;
