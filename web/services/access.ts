import 'server-only';
import { DomainError } from '@quire/core/errors';
import { type Action, type Principal, permits } from '@quire/core/roles';
import { type AuditActor, auditActorOf } from '@quire/db/auditLog';

/**
 * R1: the one gate of the role matrix (core/roles.ts). Every use case that changes a
 * workspace calls it first, for the API (keys, by scope) and the console (members, by role)
 * alike. A principal only ever reaches its own workspace (another workspace's ids are 404
 * before this), so a refusal here is a 403 that names the act, never the workspace.
 */
export function requireAction(principal: Principal, action: Action): void {
  if (permits(principal.grant, action)) return;
  const who =
    principal.grant.kind === 'role'
      ? `the ${principal.grant.role} role`
      : `a ${principal.grant.scope}-scoped key`;
  throw new DomainError('forbidden', `${who} may not do ${action}`, { action });
}

/** R5: the audit log's actor for a workspace principal. */
export function actorOf(principal: Principal): AuditActor {
  return auditActorOf(principal.actor);
}
