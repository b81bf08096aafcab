'use client';
import type { Action } from '@quire/core/roles';
import {
  changeRoleAction,
  createKeyAction,
  inviteAction,
  type MembersActionState,
  removeMemberAction,
  revokeInvitationAction,
  revokeKeyAction,
} from '@quire/web/app/members/actions';
import { type ReactNode, useActionState, useId } from 'react';

const ROLES = ['owner', 'editor', 'reviewer', 'viewer'] as const;
const INITIAL: MembersActionState = { error: null, done: null };

function Outcome({ state }: { state: MembersActionState }) {
  return (
    <>
      {state.error ? (
        <p role="alert" className="error">
          {state.error}
        </p>
      ) : null}
      {state.done ? (
        <p role="status" className="muted">
          {state.done}
        </p>
      ) : null}
      {state.secret ? (
        <p className="mono break" data-secret>
          {state.secret}
        </p>
      ) : null}
    </>
  );
}

function ActionForm({
  action,
  act,
  children,
  label,
  className,
}: {
  action: (s: MembersActionState, f: FormData) => Promise<MembersActionState>;
  /** R8: the act of core/roles.ts the form does (its `data-act`). */
  act: Action;
  children: ReactNode;
  label: string;
  className?: string;
}) {
  const [state, run, pending] = useActionState(action, INITIAL);
  return (
    <form action={run} className={className ?? 'stack'} data-act={act}>
      {children}
      <button type="submit" disabled={pending}>
        {label}
      </button>
      <Outcome state={state} />
    </form>
  );
}

export function InviteForm() {
  const id = useId();
  return (
    <ActionForm action={inviteAction} act="member.invite" label="Invite" className="card stack">
      <label htmlFor={`${id}-email`}>Email</label>
      <input id={`${id}-email`} name="email" type="email" required />
      <label htmlFor={`${id}-role`}>Role</label>
      <select id={`${id}-role`} name="role" defaultValue="editor">
        {ROLES.map((r) => (
          <option key={r}>{r}</option>
        ))}
      </select>
    </ActionForm>
  );
}

export function RoleForm({
  accountId,
  role,
  name,
}: {
  accountId: number;
  role: string;
  name: string;
}) {
  const id = useId();
  return (
    <ActionForm
      action={changeRoleAction}
      act="member.change_role"
      label="Change role"
      className="actions"
    >
      <input type="hidden" name="accountId" value={accountId} />
      <label htmlFor={`${id}-role`} className="sr-only">
        Role of {name}
      </label>
      <select id={`${id}-role`} name="role" defaultValue={role}>
        {ROLES.map((r) => (
          <option key={r}>{r}</option>
        ))}
      </select>
    </ActionForm>
  );
}

export function RemoveMemberForm({ accountId, name }: { accountId: number; name: string }) {
  return (
    <ActionForm
      action={removeMemberAction}
      act="member.remove"
      label={`Remove ${name}`}
      className="actions"
    >
      <input type="hidden" name="accountId" value={accountId} />
    </ActionForm>
  );
}

export function CreateKeyForm() {
  const id = useId();
  return (
    <ActionForm
      action={createKeyAction}
      act="api_key.create"
      label="Make key"
      className="card stack"
    >
      <label htmlFor={`${id}-name`}>Key name</label>
      <input id={`${id}-name`} name="name" required maxLength={200} />
      <label htmlFor={`${id}-scope`}>Scope</label>
      <select id={`${id}-scope`} name="scope" defaultValue="write">
        <option value="read">read</option>
        <option value="write">write</option>
      </select>
    </ActionForm>
  );
}

export function RevokeKeyForm({ apiKeyId, name }: { apiKeyId: number; name: string }) {
  return (
    <ActionForm
      action={revokeKeyAction}
      act="api_key.revoke"
      label={`Revoke ${name}`}
      className="actions"
    >
      <input type="hidden" name="apiKeyId" value={apiKeyId} />
    </ActionForm>
  );
}

export function RevokeInvitationForm({
  invitationId,
  email,
}: {
  invitationId: number;
  email: string;
}) {
  return (
    <ActionForm
      action={revokeInvitationAction}
      act="member.revoke_invitation"
      label={`Revoke the invitation of ${email}`}
      className="actions"
    >
      <input type="hidden" name="invitationId" value={invitationId} />
    </ActionForm>
  );
}
