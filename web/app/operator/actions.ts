'use server';
import { getInstallationControls, getWorkspaceControls } from '@quire/db/operatorControls';
import { refusalOf } from '@quire/web/lib/errors';
import { pool } from '@quire/web/lib/server';
import { requireOperator } from '@quire/web/lib/session';
import {
  changeInstallationControls,
  changeWorkspaceControls,
  resumeProviderAsOperator,
} from '@quire/web/services/operator';
import { disableAccount } from '@quire/web/services/people';
import { refresh } from 'next/cache';

/**
 * M4: the console's operator controls. Each form sends every field; only the fields that
 * differ from the stored value are changed, so the audit log holds what the operator changed.
 */
export interface OperatorActionState {
  error: string | null;
  done: string | null;
}

/** Blank is "no limit"; otherwise a whole number. */
function limitField(form: FormData, name: string): number | null | 'invalid' {
  const raw = String(form.get(name) ?? '').trim();
  if (raw === '') return null;
  if (!/^\d{1,15}$/.test(raw)) return 'invalid';
  return Number(raw);
}

const describe = (error: unknown) =>
  refusalOf(error, 'The change could not be saved; try again.').message;

export async function updateWorkspaceControlsAction(
  _previous: OperatorActionState,
  form: FormData,
): Promise<OperatorActionState> {
  const operator = await requireOperator();
  const workspaceId = Number(form.get('workspaceId'));
  const budget = limitField(form, 'dailyBudgetMicros');
  const quota = limitField(form, 'quotaBytes');
  const cap = limitField(form, 'activeJobCap');
  if (budget === 'invalid' || quota === 'invalid' || cap === 'invalid' || cap === 0) {
    return {
      error: 'Limits are whole numbers (a cap at least 1); leave blank for none.',
      done: null,
    };
  }
  const providers = form.getAll('enabledProviders').map(String);
  const enabled = form.get('allProviders') === 'on' ? null : providers;
  try {
    const current = await getWorkspaceControls(pool(), workspaceId);
    const change: Parameters<typeof changeWorkspaceControls>[2] = {};
    if (budget !== current.dailyBudgetMicros) change.dailyBudgetMicros = budget;
    if (quota !== current.quotaBytes) change.quotaBytes = quota;
    if (cap !== current.activeJobCap) change.activeJobCap = cap;
    if (JSON.stringify(enabled) !== JSON.stringify(current.enabledProviders)) {
      change.enabledProviders = enabled;
    }
    if (Object.keys(change).length === 0) return { error: null, done: 'Nothing changed.' };
    await changeWorkspaceControls(operator, workspaceId, change);
  } catch (error) {
    return { error: describe(error), done: null };
  }
  refresh();
  return { error: null, done: 'Saved.' };
}

export async function updateInstallationControlsAction(
  _previous: OperatorActionState,
  form: FormData,
): Promise<OperatorActionState> {
  const operator = await requireOperator();
  const budget = limitField(form, 'dailyBudgetMicros');
  const quota = limitField(form, 'quotaBytes');
  if (budget === 'invalid' || quota === 'invalid') {
    return { error: 'Limits are whole numbers; leave blank for none.', done: null };
  }
  try {
    const current = await getInstallationControls(pool());
    const change: Parameters<typeof changeInstallationControls>[1] = {};
    if (budget !== current.dailyBudgetMicros) change.dailyBudgetMicros = budget;
    if (quota !== current.quotaBytes) change.quotaBytes = quota;
    if (Object.keys(change).length === 0) return { error: null, done: 'Nothing changed.' };
    await changeInstallationControls(operator, change);
  } catch (error) {
    return { error: describe(error), done: null };
  }
  refresh();
  return { error: null, done: 'Saved.' };
}

export async function operatorResumeAction(
  _previous: OperatorActionState,
  form: FormData,
): Promise<OperatorActionState> {
  const operator = await requireOperator();
  const name = String(form.get('provider') ?? '');
  try {
    await resumeProviderAsOperator(operator, name);
  } catch (error) {
    return { error: describe(error), done: null };
  }
  refresh();
  return { error: null, done: `${name} resumed.` };
}

/**
 * R3: an operator disables an account (its sessions end at once) or enables it again, from the
 * accounts list. The form says which; the service refuses an operator disabling themself.
 */
export async function accountDisabledAction(
  _previous: OperatorActionState,
  form: FormData,
): Promise<OperatorActionState> {
  const operator = await requireOperator();
  const accountId = Number(form.get('accountId'));
  const disabled = form.get('disabled') === 'true';
  try {
    const { account, endedSessions } = await disableAccount(operator, accountId, disabled);
    refresh();
    return {
      error: null,
      done: disabled
        ? `${account.email} disabled; ${endedSessions} session${endedSessions === 1 ? '' : 's'} ended.`
        : `${account.email} enabled.`,
    };
  } catch (error) {
    return { error: describe(error), done: null };
  }
}
