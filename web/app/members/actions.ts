'use server';
import { refusalOf } from '@quire/web/lib/errors';
import { requireAct } from '@quire/web/lib/session';
import {
  changeRole,
  createWorkspaceKey,
  inviteMember,
  removeWorkspaceMember,
  revokeWorkspaceInvitation,
  revokeWorkspaceKey,
} from '@quire/web/services/people';
import { refresh } from 'next/cache';

/** R1: the owners' acts on members, invitations and keys (web/services/people.ts). */
export interface MembersActionState {
  error: string | null;
  done: string | null;
  /** Shown once: a new key. */
  secret?: string;
}

const refusal = (error: unknown): MembersActionState => ({
  error: refusalOf(error).message,
  done: null,
});

export async function inviteAction(
  _previous: MembersActionState,
  form: FormData,
): Promise<MembersActionState> {
  const principal = await requireAct('member.invite');
  try {
    // X2, X6: the link goes to the address only; the answer is the same for every address.
    const { email } = await inviteMember(principal, {
      email: String(form.get('email') ?? ''),
      role: String(form.get('role') ?? ''),
    });
    refresh();
    return { error: null, done: `Invitation sent to ${email}; its link works once.` };
  } catch (error) {
    return refusal(error);
  }
}

export async function revokeInvitationAction(
  _previous: MembersActionState,
  form: FormData,
): Promise<MembersActionState> {
  const principal = await requireAct('member.revoke_invitation');
  try {
    await revokeWorkspaceInvitation(principal, Number(form.get('invitationId')));
    refresh();
    return { error: null, done: 'Invitation revoked; its link no longer works.' };
  } catch (error) {
    return refusal(error);
  }
}

export async function changeRoleAction(
  _previous: MembersActionState,
  form: FormData,
): Promise<MembersActionState> {
  const principal = await requireAct('member.change_role');
  try {
    await changeRole(principal, {
      accountId: Number(form.get('accountId')),
      role: String(form.get('role') ?? ''),
    });
    refresh();
    return { error: null, done: 'Role changed.' };
  } catch (error) {
    return refusal(error);
  }
}

export async function removeMemberAction(
  _previous: MembersActionState,
  form: FormData,
): Promise<MembersActionState> {
  const principal = await requireAct('member.remove');
  try {
    await removeWorkspaceMember(principal, Number(form.get('accountId')));
    refresh();
    return { error: null, done: 'Removed; their sessions have ended.' };
  } catch (error) {
    return refusal(error);
  }
}

export async function createKeyAction(
  _previous: MembersActionState,
  form: FormData,
): Promise<MembersActionState> {
  const principal = await requireAct('api_key.create');
  try {
    const { key } = await createWorkspaceKey(principal, {
      name: String(form.get('name') ?? ''),
      scope: String(form.get('scope') ?? ''),
    });
    refresh();
    return { error: null, done: 'Key made. Copy it now; it is not shown again.', secret: key };
  } catch (error) {
    return refusal(error);
  }
}

export async function revokeKeyAction(
  _previous: MembersActionState,
  form: FormData,
): Promise<MembersActionState> {
  const principal = await requireAct('api_key.revoke');
  try {
    await revokeWorkspaceKey(principal, Number(form.get('apiKeyId')));
    refresh();
    return { error: null, done: 'Key revoked.' };
  } catch (error) {
    return refusal(error);
  }
}
