import 'server-only';
import { hostname } from 'node:os';
import { redactError } from '@quire/core/redact';
import { acquireStreamLease, releaseStreamLease, renewStreamLeases } from '@quire/db/streamLeases';
import { ApiError } from './api';
import { config, pool } from './server';

/**
 * S1: the stream slots of this web process. Each open stream (the workspace event stream, the
 * console's change stream) holds a lease row in PostgreSQL (db/streamLeases.ts), so the limits
 * per principal and per workspace count the streams of every replica. One timer renews this
 * process's leases together; a stream whose lease could not be renewed in time has lost its
 * slot and is ended, and its client reconnects (with Last-Event-ID, losing nothing).
 */
export interface StreamSlot {
  readonly id: string;
  /** Gives the slot back; safe to call more than once. */
  release(): void;
}

interface Held {
  onLost: () => void;
}

/** Who serves the stream, for the operator reading `stream_leases`. */
const HOLDER = `${hostname()}:${process.pid}`;

const globals = globalThis as unknown as {
  quireStreamSlots?: Map<string, Held>;
  quireStreamRenewal?: NodeJS.Timeout;
  quireStreamRenewing?: boolean;
};

function held(): Map<string, Held> {
  globals.quireStreamSlots ??= new Map();
  return globals.quireStreamSlots;
}

function log(msg: string, fields: Record<string, unknown>) {
  console.warn(
    JSON.stringify({
      level: 'warn',
      service: 'quire-web',
      component: 'stream-slots',
      msg,
      ...fields,
    }),
  );
}

async function renew() {
  if (globals.quireStreamRenewing) return;
  globals.quireStreamRenewing = true;
  const ids = [...held().keys()];
  try {
    const renewed = await renewStreamLeases(pool(), ids, config().QUIRE_SSE_LEASE_MS);
    for (const id of ids) {
      if (!renewed.has(id)) held().get(id)?.onLost();
    }
  } catch (error) {
    // Tried again at the next tick; a lease outlives a few missed renewals.
    log('stream leases not renewed', { error: redactError(error), streams: ids.length });
  } finally {
    globals.quireStreamRenewing = false;
  }
}

function ensureRenewal() {
  if (globals.quireStreamRenewal) return;
  const every = Math.max(250, Math.floor(config().QUIRE_SSE_LEASE_MS / 3));
  globals.quireStreamRenewal = setInterval(() => void renew(), every);
  globals.quireStreamRenewal.unref();
}

function stopRenewalWhenIdle() {
  if (held().size > 0 || !globals.quireStreamRenewal) return;
  clearInterval(globals.quireStreamRenewal);
  globals.quireStreamRenewal = undefined;
}

/**
 * Takes a slot for a stream of `principal` in `workspaceId`, or refuses with 429:
 * `too_many_streams` (this principal's limit) or `too_many_workspace_streams`.
 * `onLost` ends the stream when its lease could not be kept.
 */
export async function acquireStreamSlot(args: {
  workspaceId: number;
  principal: string;
  perPrincipal: number;
  /** How the limit reads in the refusal ("event streams per API key"). */
  describe: string;
  onLost: () => void;
}): Promise<StreamSlot> {
  const result = await acquireStreamLease(pool(), {
    workspaceId: args.workspaceId,
    principal: args.principal,
    holder: HOLDER,
    limits: {
      perPrincipal: args.perPrincipal,
      perWorkspace: config().QUIRE_SSE_MAX_STREAMS_PER_WORKSPACE,
      leaseMs: config().QUIRE_SSE_LEASE_MS,
    },
  });
  if (!result.acquired) {
    throw result.limit === 'principal'
      ? new ApiError('too_many_streams', `at most ${result.max} ${args.describe}`, {
          'Retry-After': '5',
        })
      : new ApiError(
          'too_many_workspace_streams',
          `at most ${result.max} open streams per workspace`,
          { 'Retry-After': '5' },
        );
  }
  const id = result.id;
  held().set(id, { onLost: args.onLost });
  ensureRenewal();
  let released = false;
  return {
    id,
    release() {
      if (released) return;
      released = true;
      held().delete(id);
      stopRenewalWhenIdle();
      releaseStreamLease(pool(), id).catch((error) =>
        // Not given back now: the lease runs out by itself.
        log('stream lease not released', { error: redactError(error) }),
      );
    },
  };
}
