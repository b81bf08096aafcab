import type { FailureClass, PauseReason, ProviderError } from '../core/failures';
import type { Logger } from '../core/logger';
import type { JobSnapshot } from '../core/provider';
import type { AttemptFence } from '../db/fence';
import type { Pool } from '../db/pool';
import type { ProviderRegistry } from '../providers/registry';
import type { PagesInHand } from './pagesInHand';

/**
 * What every transcription activity shares: the attempt's fence and context
 * (activities/attemptFence.ts), the page's media (pageMedia.ts), the budget guard (B1) and
 * the ledger (attemptBilling.ts), the heartbeat (T3) and the wait for our own database (D7,
 * attemptSaving.ts), and the activity boundary with its one mapping of errors to the failures
 * the workflow branches on (Q3, activityBoundary.ts).
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
