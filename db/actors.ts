import { type Actor, type ActorNames, actorKey, isNamedActor } from '../core/actor';
import type { Queryable } from './pool';

/**
 * R7: the names of the accounts and keys that acted, in one query for any number of them (an
 * audit page, a revision history, an export's provenance), for core/actor.ts `actorName`. An
 * account shows its name (its email if the name were empty), a key its label (or its prefix
 * when it has none).
 */
export async function actorNames(db: Queryable, actors: Iterable<Actor>): Promise<ActorNames> {
  const ids = {
    account: new Set<number>(),
    apiKey: new Set<number>(),
    operatorKey: new Set<number>(),
  };
  for (const actor of actors) if (isNamedActor(actor)) ids[actor.kind].add(actor.id);
  const names = new Map<string, string>();
  if (ids.account.size + ids.apiKey.size + ids.operatorKey.size === 0) return names;
  const { rows } = await db.query<{
    kind: 'account' | 'apiKey' | 'operatorKey';
    id: string;
    name: string;
  }>(
    `SELECT 'account' AS kind, id, coalesce(nullif(name, ''), email) AS name
       FROM accounts WHERE id = ANY($1::bigint[])
     UNION ALL
     SELECT 'apiKey', id, coalesce(label, 'key ' || key_prefix) FROM api_keys WHERE id = ANY($2::bigint[])
     UNION ALL
     SELECT 'operatorKey', id, coalesce(label, 'operator key ' || key_prefix)
       FROM operator_keys WHERE id = ANY($3::bigint[])`,
    [[...ids.account], [...ids.apiKey], [...ids.operatorKey]],
  );
  for (const r of rows) names.set(actorKey({ kind: r.kind, id: Number(r.id) }), r.name);
  return names;
}
