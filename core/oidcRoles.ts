import { ROLES, type Role } from './roles';

/**
 * R2: how an identity provider's claims become Quire's memberships (QUIRE_OIDC_ROLE_MAPPING):
 * the groups in `claim` (a list, or one string) each grant roles in workspaces, and some make
 * the person an operator of the installation. Where two groups give roles in the same
 * workspace, the stronger role wins. Pure, so the mapping is tested on its own.
 */
export interface OidcRoleMapping {
  claim: string;
  workspaces: Record<string, Record<string, Role>>;
  operators: string[];
}

export interface MappedAccess {
  operator: boolean;
  memberships: Array<{ workspaceId: number; role: Role }>;
}

/** Stronger first: owner, editor, reviewer, viewer. */
const strength = (role: Role) => ROLES.length - ROLES.indexOf(role);

export function groupsOf(claims: Record<string, unknown>, claim: string): string[] {
  const value = claims[claim];
  if (typeof value === 'string') return [value];
  if (Array.isArray(value)) return value.filter((g): g is string => typeof g === 'string');
  return [];
}

export function mapClaims(mapping: OidcRoleMapping, claims: Record<string, unknown>): MappedAccess {
  const groups = groupsOf(claims, mapping.claim);
  const roles = new Map<number, Role>();
  for (const group of groups) {
    for (const [workspace, role] of Object.entries(mapping.workspaces[group] ?? {})) {
      const workspaceId = Number(workspace);
      const held = roles.get(workspaceId);
      if (!held || strength(role) > strength(held)) roles.set(workspaceId, role);
    }
  }
  return {
    operator: groups.some((g) => mapping.operators.includes(g)),
    memberships: [...roles].map(([workspaceId, role]) => ({ workspaceId, role })),
  };
}
