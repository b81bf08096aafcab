'use client';
import {
  accountDisabledAction,
  type OperatorActionState,
  operatorResumeAction,
  updateInstallationControlsAction,
  updateWorkspaceControlsAction,
} from '@quire/web/app/operator/actions';
import { useActionState } from 'react';

const initial: OperatorActionState = { error: null, done: null };

function Outcome({ state }: { state: OperatorActionState }) {
  return (
    <span role="status" aria-live="polite" className={state.error ? 'error' : 'muted'}>
      {state.error ?? state.done ?? ''}
    </span>
  );
}

/** M4: one workspace's budget, quota, active-job cap and enabled providers. */
export function WorkspaceControlsForm({
  workspaceId,
  name,
  controls,
  providers,
}: {
  workspaceId: number;
  name: string;
  controls: {
    dailyBudgetMicros: number | null;
    quotaBytes: number | null;
    activeJobCap: number | null;
    enabledProviders: string[] | null;
  };
  providers: readonly string[];
}) {
  const [state, action, pending] = useActionState(updateWorkspaceControlsAction, initial);
  const id = (field: string) => `ws-${workspaceId}-${field}`;
  return (
    <form
      action={action}
      className="stack"
      aria-label={`Controls of workspace ${workspaceId} (${name})`}
      data-workspace={workspaceId}
    >
      <input type="hidden" name="workspaceId" value={workspaceId} />
      <label htmlFor={id('budget')}>Daily budget (micro-units, blank for none)</label>
      <input
        id={id('budget')}
        name="dailyBudgetMicros"
        inputMode="numeric"
        defaultValue={controls.dailyBudgetMicros ?? ''}
      />
      <label htmlFor={id('quota')}>Byte quota (blank for none)</label>
      <input
        id={id('quota')}
        name="quotaBytes"
        inputMode="numeric"
        defaultValue={controls.quotaBytes ?? ''}
      />
      <label htmlFor={id('cap')}>Active-job cap (blank for none)</label>
      <input
        id={id('cap')}
        name="activeJobCap"
        inputMode="numeric"
        defaultValue={controls.activeJobCap ?? ''}
      />
      <fieldset>
        <legend>Enabled providers</legend>
        <label>
          <input
            type="checkbox"
            name="allProviders"
            defaultChecked={controls.enabledProviders === null}
          />{' '}
          every provider of the installation
        </label>
        {providers.map((provider) => (
          <label key={provider}>
            <input
              type="checkbox"
              name="enabledProviders"
              value={provider}
              defaultChecked={controls.enabledProviders?.includes(provider) ?? false}
            />{' '}
            {provider}
          </label>
        ))}
      </fieldset>
      <div className="actions">
        <button type="submit" disabled={pending}>
          {pending ? 'Saving…' : `Save workspace ${workspaceId}`}
        </button>
        <Outcome state={state} />
      </div>
    </form>
  );
}

/** M4: the global daily budget and byte quota. */
export function InstallationControlsForm({
  controls,
}: {
  controls: { dailyBudgetMicros: number | null; quotaBytes: number | null };
}) {
  const [state, action, pending] = useActionState(updateInstallationControlsAction, initial);
  return (
    <form action={action} className="stack" aria-label="Installation controls">
      <label htmlFor="global-budget">Global daily budget (micro-units, blank for none)</label>
      <input
        id="global-budget"
        name="dailyBudgetMicros"
        inputMode="numeric"
        defaultValue={controls.dailyBudgetMicros ?? ''}
      />
      <label htmlFor="global-quota">Global byte quota (blank: the configured fallback)</label>
      <input
        id="global-quota"
        name="quotaBytes"
        inputMode="numeric"
        defaultValue={controls.quotaBytes ?? ''}
      />
      <div className="actions">
        <button type="submit" disabled={pending}>
          {pending ? 'Saving…' : 'Save installation limits'}
        </button>
        <Outcome state={state} />
      </div>
    </form>
  );
}

/** M1: an operator's Resume of a paused provider. */
export function OperatorResumeButton({ provider }: { provider: string }) {
  const [state, action, pending] = useActionState(operatorResumeAction, initial);
  return (
    <form action={action} className="inline-form">
      <input type="hidden" name="provider" value={provider} />
      <button type="submit" disabled={pending} aria-label={`Resume ${provider}`}>
        {pending ? 'Resuming…' : 'Resume'}
      </button>
      <Outcome state={state} />
    </form>
  );
}

/** R3: disable an account (every session of it ends) or enable it again. */
export function AccountDisabledButton({
  accountId,
  email,
  disabled,
}: {
  accountId: number;
  email: string;
  /** Whether the account is disabled now; the button does the opposite. */
  disabled: boolean;
}) {
  const [state, action, pending] = useActionState(accountDisabledAction, initial);
  const verb = disabled ? 'Enable' : 'Disable';
  return (
    <form action={action} className="inline-form">
      <input type="hidden" name="accountId" value={accountId} />
      <input type="hidden" name="disabled" value={disabled ? 'false' : 'true'} />
      <button type="submit" disabled={pending} aria-label={`${verb} ${email}`}>
        {pending ? `${verb.replace(/e$/, '')}ing…` : verb}
      </button>
      <Outcome state={state} />
    </form>
  );
}
