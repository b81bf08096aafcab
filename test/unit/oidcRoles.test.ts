import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../core/config';
import { mapClaims } from '../../core/oidcRoles';

describe('R2 claim and group mapping to roles', () => {
  const mapping = parseConfig({
    QUIRE_OIDC_ROLE_MAPPING: JSON.stringify({
      claim: 'groups',
      workspaces: { archivists: { '1': 'editor', '2': 'viewer' }, leads: { '1': 'owner' } },
      operators: ['ops'],
    }),
  }).QUIRE_OIDC_ROLE_MAPPING;

  it('R2 each group grants its roles; the stronger role of two wins; operator groups make operators', () => {
    expect(mapClaims(mapping, { groups: ['archivists', 'leads'] })).toEqual({
      operator: false,
      memberships: [
        { workspaceId: 1, role: 'owner' },
        { workspaceId: 2, role: 'viewer' },
      ],
    });
    expect(mapClaims(mapping, { groups: 'ops' })).toEqual({ operator: true, memberships: [] });
    expect(mapClaims(mapping, { groups: [42, 'unknown'] })).toEqual({
      operator: false,
      memberships: [],
    });
    expect(mapClaims(mapping, {})).toEqual({ operator: false, memberships: [] });
  });

  it('R2 the mapping is a validated setting: a bad role or shape stops the start with a clear message', () => {
    expect(() =>
      parseConfig({ QUIRE_OIDC_ROLE_MAPPING: '{"workspaces":{"g":{"1":"admin"}}}' }),
    ).toThrow(/QUIRE_OIDC_ROLE_MAPPING/);
    expect(() => parseConfig({ QUIRE_OIDC_ROLE_MAPPING: 'not json' })).toThrow(
      /QUIRE_OIDC_ROLE_MAPPING/,
    );
    expect(parseConfig({}).QUIRE_OIDC_ROLE_MAPPING).toEqual({
      claim: 'groups',
      workspaces: {},
      operators: [],
    });
  });
});
