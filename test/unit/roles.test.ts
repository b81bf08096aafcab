import { describe, expect, it } from 'vitest';
import { ACTIONS, type Action, permits, ROLE_MATRIX, ROLES, type Role } from '../../core/roles';

/**
 * R1 in the SPEC's own words: "`owner` (members, keys, webhooks, settings), `editor` (upload,
 * start and cancel jobs, edit, publish), `reviewer` (edit and verify lines, publish), `viewer`
 * (read)". Each word names the actions of core/roles.ts it covers; a role may do exactly the
 * actions of its words (an owner also those of an editor, who works in the workspace too).
 */
const SPEC_WORDS: Record<string, Action[]> = {
  read: ['workspace.read'],
  upload: [
    'batch.create',
    'item.delete',
    // F1, F2: arranging what was uploaded (collections, item descriptions, page order).
    'collection.create',
    'collection.update',
    'collection.delete',
    'item.update',
    'item.arrange',
  ],
  'start and cancel jobs': ['job.start', 'job.cancel', 'job.rerun', 'batch.cancel'],
  edit: ['page.edit'],
  publish: ['page.publish'],
  members: ['member.invite', 'member.revoke_invitation', 'member.change_role', 'member.remove'],
  keys: ['api_key.create', 'api_key.revoke'],
  webhooks: ['webhook.create', 'webhook.delete', 'webhook.replay'],
  settings: ['provider.resume', 'workspace.settings'],
};
const ROLE_WORDS: Record<Role, string[]> = {
  viewer: ['read'],
  reviewer: ['read', 'edit', 'publish'],
  editor: ['read', 'upload', 'start and cancel jobs', 'edit', 'publish'],
  owner: [
    'read',
    'upload',
    'start and cancel jobs',
    'edit',
    'publish',
    'members',
    'keys',
    'webhooks',
    'settings',
  ],
};

describe('R1 role matrix against the SPEC', () => {
  it('R1 every action of ROLE_MATRIX is named by one of the SPEC words', () => {
    expect(new Set(Object.values(SPEC_WORDS).flat())).toEqual(new Set(ACTIONS));
  });

  for (const role of ROLES) {
    it(`R1 a ${role} may do exactly what the SPEC gives it`, () => {
      const allowed = ACTIONS.filter((a) => permits({ kind: 'role', role }, a)).sort();
      expect(allowed).toEqual([...new Set(ROLE_WORDS[role].flatMap((w) => SPEC_WORDS[w]!))].sort());
    });
  }

  it('R1 a read key reads only; a write key does what an editor and the webhooks do, never members or keys', () => {
    for (const action of ACTIONS) {
      expect(permits({ kind: 'key', scope: 'read' }, action)).toBe(action === 'workspace.read');
      expect(permits({ kind: 'key', scope: 'write' }, action)).toBe(
        ROLE_MATRIX[action].keys !== 'none',
      );
    }
    expect(permits({ kind: 'key', scope: 'write' }, 'member.invite')).toBe(false);
    expect(permits({ kind: 'key', scope: 'write' }, 'api_key.create')).toBe(false);
  });
});
