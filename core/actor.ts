import type { LineAuthor } from './annotation';

/**
 * R5 R7: who acted, one type for every row that records it (revisions, the audit log, line
 * stamps). A person acts as an account (a member, or an operator signed in); an integrator
 * through a workspace's API key; an operator's script through an operator key; the admin CLI
 * with the database's own credentials; an engine or an imported file writes machine text.
 * Stored as typed columns (kind, id), never as a string to parse; shown by name through
 * `actorName` after db/actors.ts `actorNames` looked the names up.
 */
export type Actor =
  /** `name` (here and on keys): as the acting side knew it, kept by the audit log. */
  | { kind: 'account'; id: number; name?: string }
  | { kind: 'apiKey'; id: number; name?: string }
  | { kind: 'operatorKey'; id: number; name?: string }
  | { kind: 'engine'; engine: string }
  | { kind: 'import' }
  | { kind: 'cli' };

export type ActorKind = Actor['kind'];

/** Who acts in a workspace: a member's account or one of its API keys (core/roles.ts Principal). */
export type WorkspaceActor = Extract<Actor, { kind: 'account' | 'apiKey' }>;
export type AccountActor = Extract<Actor, { kind: 'account' }>;
/** The actors with a row of their own (accounts, api_keys, operator_keys) that names them. */
export type NamedActor = Extract<Actor, { kind: 'account' | 'apiKey' | 'operatorKey' }>;

export const CLI_ACTOR = { kind: 'cli' } as const satisfies Actor;

export function isNamedActor(actor: Actor): actor is NamedActor {
  return actor.kind === 'account' || actor.kind === 'apiKey' || actor.kind === 'operatorKey';
}

/** The key of a named actor in an `ActorNames` lookup. */
export function actorKey(actor: NamedActor): string {
  return `${actor.kind}:${actor.id}`;
}

/** Names of accounts (their name, else their email) and keys (their label), by `actorKey`. */
export type ActorNames = ReadonlyMap<string, string>;

/**
 * R7: the one way an actor is shown to people: an account by its name, a key by its label,
 * an engine by its name; never an internal reference or "null". `recorded` is the name kept
 * with the act (the audit log's), which wins over today's name.
 */
export function actorName(actor: Actor, names: ActorNames, recorded?: string | null): string {
  switch (actor.kind) {
    case 'account':
      return recorded ?? names.get(actorKey(actor)) ?? `account ${actor.id}`;
    case 'apiKey':
      return recorded ?? names.get(actorKey(actor)) ?? `API key ${actor.id}`;
    case 'operatorKey':
      return recorded ?? names.get(actorKey(actor)) ?? `operator key ${actor.id}`;
    case 'engine':
      return actor.engine;
    case 'import':
      return 'an imported file';
    case 'cli':
      return 'admin CLI';
  }
}

/**
 * R5: the actor as the API shows it beside its name (`actor` of an audit entry, a revision's
 * `editedByActor`): `type` is the actor's kind, `id` its row's id (null where it has none).
 */
export interface ActorView {
  type: ActorKind;
  id: number | null;
  name: string;
}

export function actorView(actor: Actor, names: ActorNames, recorded?: string | null): ActorView {
  return {
    type: actor.kind,
    id: isNamedActor(actor) ? actor.id : null,
    name: actorName(actor, names, recorded),
  };
}

/**
 * R7: an actor as a screen or an export shows it: the name people read, and beneath it the
 * row it names, kept for a title, a data attribute or an export's attribute: `ref` as a
 * machine reads it (`account:7`, the `ActorNames` key), `title` as a person does
 * (`account 7`). An engine, an imported file and the admin CLI have no row: both are null.
 */
export interface ActorDisplay {
  name: string;
  ref: string | null;
  title: string | null;
}

const ROW_WORDS: Record<NamedActor['kind'], string> = {
  account: 'account',
  apiKey: 'API key',
  operatorKey: 'operator key',
};

export function actorDisplay(view: ActorView): ActorDisplay {
  if (view.id === null || !(view.type in ROW_WORDS)) {
    return { name: view.name, ref: null, title: null };
  }
  const kind = view.type as NamedActor['kind'];
  return {
    name: view.name,
    ref: actorKey({ kind, id: view.id }),
    title: `${ROW_WORDS[kind]} ${view.id}`,
  };
}

/** Where a person made an edit: the HTTP API or the console. */
export type EditChannel = 'api' | 'console';

/**
 * The API's `editedBy` of a revision (`account:7`, `console:api-key:3`), kept for clients
 * that read it since before accounts; written from the typed columns, never read back.
 */
export function editedByReference(actor: WorkspaceActor, channel: EditChannel): string {
  const ref = actor.kind === 'account' ? `account:${actor.id}` : `api-key:${actor.id}`;
  return channel === 'console' ? `console:${ref}` : ref;
}

/**
 * S1: whose open streams a stream counts toward (`stream_leases.principal`): the event stream
 * an API key (`key:3`) or an account (`account:7`) opened, or a console's live stream
 * (`console:` before either). Every replica counts the others' rows, so the spelling stays
 * the one replicas already write; it is compared, never read back.
 */
export function streamPrincipal(actor: WorkspaceActor, surface: 'api' | 'console'): string {
  if (surface === 'console') {
    return `console:${actor.kind === 'account' ? 'account' : 'api-key'}:${actor.id}`;
  }
  return actor.kind === 'account' ? `account:${actor.id}` : `key:${actor.id}`;
}

/**
 * V1: a line stamp's author as the AnnotationPage carries it (`quire:stateBy`, a published
 * format kept in every revision), and back.
 */
export function lineAuthorOf(actor: WorkspaceActor): LineAuthor {
  return actor.kind === 'account'
    ? { kind: 'account', id: String(actor.id) }
    : { kind: 'api-key', id: String(actor.id) };
}

export function actorOfLineAuthor(author: LineAuthor): Actor {
  switch (author.kind) {
    case 'account':
      return { kind: 'account', id: Number(author.id) };
    case 'api-key':
      return { kind: 'apiKey', id: Number(author.id) };
    case 'engine':
      return { kind: 'engine', engine: author.id };
    case 'import':
      return { kind: 'import' };
  }
}
