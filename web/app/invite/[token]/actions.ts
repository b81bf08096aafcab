'use server';
import { refusalOf } from '@quire/web/lib/errors';
import { startSession } from '@quire/web/lib/session';
import { clientAddress } from '@quire/web/lib/signin';
import { acceptInvitationLink } from '@quire/web/services/people';
import { headers } from 'next/headers';
import { redirect } from 'next/navigation';

export interface AcceptState {
  error: string | null;
}

/** R1: accept a one-time invitation link, and sign in to the workspace it opens. */
export async function acceptInvitationAction(
  _previous: AcceptState,
  form: FormData,
): Promise<AcceptState> {
  try {
    const accepted = await acceptInvitationLink({
      token: String(form.get('token') ?? ''),
      name: String(form.get('name') ?? ''),
      password: String(form.get('password') ?? ''),
      address: clientAddress(await headers()),
    });
    await startSession({ accountId: accepted.account.id, workspaceId: accepted.workspaceId });
  } catch (error) {
    return { error: refusalOf(error).message };
  }
  // F4: an editor lands on the archive.
  redirect('/');
}
