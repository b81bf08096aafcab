'use server';
import { currentSession, switchSessionWorkspace } from '@quire/web/lib/session';
import { roleIn } from '@quire/web/services/people';
import { redirect } from 'next/navigation';

/** R1: an account's session moves to another workspace it is a member of. */
export async function switchWorkspaceAction(form: FormData): Promise<void> {
  const session = await currentSession();
  if (session?.kind !== 'account') redirect('/signin');
  const workspaceId = Number(form.get('workspaceId'));
  if (!Number.isSafeInteger(workspaceId) || !(await roleIn(session.accountId, workspaceId))) {
    redirect('/workspaces');
  }
  await switchSessionWorkspace(workspaceId);
  // F4: an editor lands on the archive.
  redirect('/');
}
