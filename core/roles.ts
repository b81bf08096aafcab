import type { WorkspaceActor } from './actor';

/**
 * R1: who may do what in a workspace, in one table. A member acts with the powers of their
 * role; an API key with those of its scope. Every state-changing use case asks `permits`
 * (through `requireAction` in web/services/access.ts) before it changes anything, so the API
 * and the console enforce the same table. A new route names its action here.
 */

export const ROLES = ['owner', 'editor', 'reviewer', 'viewer'] as const;
export type Role = (typeof ROLES)[number];

export const KEY_SCOPES = ['read', 'write'] as const;
export type KeyScope = (typeof KEY_SCOPES)[number];

/** What a principal holds in its workspace: a member's role, or an API key's scope. */
export type Grant = { kind: 'role'; role: Role } | { kind: 'key'; scope: KeyScope };

interface ActionRule {
  /** The roles that may. */
  roles: readonly Role[];
  /** The least key scope that may; `none`: no key may, only a person (members and keys). */
  keys: KeyScope | 'none';
}

const ALL: readonly Role[] = ROLES;
const EDITORS: readonly Role[] = ['owner', 'editor'];
const REVIEWERS: readonly Role[] = ['owner', 'editor', 'reviewer'];
const OWNERS: readonly Role[] = ['owner'];

/**
 * SPEC R1: `owner` (members, keys, webhooks, settings), `editor` (upload, start and cancel
 * jobs, edit, publish), `reviewer` (edit and verify lines, publish), `viewer` (read). An owner
 * can do everything an editor can.
 */
export const ROLE_MATRIX = {
  'workspace.read': { roles: ALL, keys: 'read' },
  'batch.create': { roles: EDITORS, keys: 'write' },
  'batch.cancel': { roles: EDITORS, keys: 'write' },
  'job.start': { roles: EDITORS, keys: 'write' },
  'job.cancel': { roles: EDITORS, keys: 'write' },
  'job.rerun': { roles: EDITORS, keys: 'write' },
  'item.delete': { roles: EDITORS, keys: 'write' },
  // F1, F2: arranging the material (collections, an item's description, its pages' order).
  'collection.create': { roles: EDITORS, keys: 'write' },
  'collection.update': { roles: EDITORS, keys: 'write' },
  'collection.delete': { roles: EDITORS, keys: 'write' },
  'item.update': { roles: EDITORS, keys: 'write' },
  'item.arrange': { roles: EDITORS, keys: 'write' },
  'page.edit': { roles: REVIEWERS, keys: 'write' },
  'page.publish': { roles: REVIEWERS, keys: 'write' },
  'provider.resume': { roles: OWNERS, keys: 'write' },
  // V6: the workspace's own settings (what happens to its recordings).
  'workspace.settings': { roles: OWNERS, keys: 'write' },
  'webhook.create': { roles: OWNERS, keys: 'write' },
  'webhook.delete': { roles: OWNERS, keys: 'write' },
  'webhook.replay': { roles: OWNERS, keys: 'write' },
  'member.invite': { roles: OWNERS, keys: 'none' },
  'member.revoke_invitation': { roles: OWNERS, keys: 'none' },
  'member.change_role': { roles: OWNERS, keys: 'none' },
  'member.remove': { roles: OWNERS, keys: 'none' },
  'api_key.create': { roles: OWNERS, keys: 'none' },
  'api_key.revoke': { roles: OWNERS, keys: 'none' },
} as const satisfies Record<string, ActionRule>;

export type Action = keyof typeof ROLE_MATRIX;
export const ACTIONS = Object.keys(ROLE_MATRIX) as Action[];

export function isRole(value: unknown): value is Role {
  return typeof value === 'string' && (ROLES as readonly string[]).includes(value);
}

export function isKeyScope(value: unknown): value is KeyScope {
  return typeof value === 'string' && (KEY_SCOPES as readonly string[]).includes(value);
}

export function permits(grant: Grant, action: Action): boolean {
  const rule: ActionRule = ROLE_MATRIX[action];
  if (grant.kind === 'role') return rule.roles.includes(grant.role);
  if (rule.keys === 'none') return false;
  return rule.keys === 'read' || grant.scope === 'write';
}

/** A workspace principal: who acts, in which workspace, with which powers. */
export interface Principal {
  workspaceId: number;
  /** R5: the account or API key that acts, with its name as the session or key knows it. */
  actor: WorkspaceActor;
  grant: Grant;
}
