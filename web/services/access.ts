import 'server-only';
import type { WorkspaceActor } from '@quire/core/actor';
import { DomainError } from '@quire/core/errors';
import { type Action, type Principal, permits } from '@quire/core/roles';

/**
 * R1: the one gate of the role matrix (core/roles.ts). Every use case that changes a
 * workspace calls it first, for the API (keys, by scope) and the console (members, by role)
 * alike. A principal only ever reaches its own workspace (another workspace's ids are 404
 * before this), so a refusal here is a 403 that names the act, never the workspace.
 */
export function requireAction(principal: Principal, action: Action): void {
  if (permits(principal.grant, action)) return;
  throw new DomainError('forbidden', refusalSentence(principal, action), { action });
}

/** R8: the sentence of a refusal: who may not do what (`the viewer role may not do …`). */
export function refusalSentence(principal: Principal, action: Action): string {
  const who =
    principal.grant.kind === 'role'
      ? `the ${principal.grant.role} role`
      : `a ${principal.grant.scope}-scoped key`;
  return `${who} may not do ${action}`;
}

/** R5: who a workspace principal's acts are recorded as: its account or its API key. */
export function actorOf(principal: Principal): WorkspaceActor {
  return principal.actor;
}
