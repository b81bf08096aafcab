import { ApplicationFailure, CancelledFailure, Context } from '@temporalio/activity';
import {
  type FailureClass,
  INFRASTRUCTURE_FAULT,
  InfrastructureFaultError,
  isInfrastructureError,
  ProviderError,
  STALE_ATTEMPT,
  StaleAttemptError,
} from '../core/failures';
import type { CallContext } from '../core/provider';
import { redactError } from '../core/redact';
import { isInteractiveTaskQueue, PRIORITY_KEYS } from '../core/temporal';
import { type AttemptStepOutcome, recordAttemptStep } from '../db/attemptSteps';
import type {
  ActivityProfile,
  AttemptContext,
  AttemptRef,
  TranscriptionDeps,
} from './attemptContext';
import { InteractiveGate } from './interactiveGate';
import type { PagesInHand } from './pagesInHand';

/**
 * The activity boundary: every error leaves as a failure the workflow branches on (Q3).
 * Cancellation and failures already made pass through as they are.
 */
export function failureOf(
  deps: Pick<TranscriptionDeps, 'logger'>,
  error: unknown,
  profile: ActivityProfile,
  ctx?: AttemptContext,
): unknown {
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

/**
 * The activity boundary of an attempt's steps: the context read first, the page in this
 * process's hand (M5), a person's page first (P8), the step recorded (D7), and every error
 * leaving as a failure the workflow branches on (`failureOf`).
 */
export function createActivityBoundary(
  deps: TranscriptionDeps,
  parts: {
    hand: PagesInHand;
    attemptContext: (ref: AttemptRef) => Promise<AttemptContext>;
    untilSaved: <T>(what: string, save: () => Promise<T>) => Promise<T>;
  },
) {
  const { pool } = deps;
  const { hand, attemptContext, untilSaved } = parts;
  // P8: one per kit; a worker process's two Temporal workers share the kit's activities.
  const gate = new InteractiveGate();

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

  async function guarded<T>(
    profile: ActivityProfile,
    ctx: AttemptContext | undefined,
    work: () => Promise<T>,
  ): Promise<T> {
    try {
      return await (personWaits() ? gate.holding(work) : work());
    } catch (error) {
      throw failureOf(deps, error, profile, ctx);
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

  return { callContext, guarded, makeWay, withAttempt };
}
