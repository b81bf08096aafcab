import { isPauseReason, type PauseReason } from '@quire/core/failures';
import type { Principal } from '@quire/db/workspaces';
import { type ProviderQueue, providerQueues } from '@quire/web/services/providers';
import { ResumeButton } from './ResumeButton';
import { Time } from './Time';

/** What each pause reason means, in the editor's words. */
const REASONS: Record<PauseReason, string> = {
  credit: 'out of credit',
  auth: 'its credentials were refused',
  outage: 'the provider is down',
  budget: 'the daily budget is spent',
};

/**
 * Q3, M3: shown on every page while a provider's queue is paused for this workspace, with the
 * reason and, for a pause of the workspace's own credentials, a Resume button (a pause of the
 * installation's shared credentials is an operator's to lift).
 */
export async function PausedBanner({ principal }: { principal: Principal }) {
  let paused: ProviderQueue[];
  try {
    paused = (await providerQueues(principal)).filter((s) => s.status === 'paused');
  } catch {
    return null;
  }
  if (paused.length === 0) return null;
  return (
    <section className="banner" aria-labelledby="paused-heading" data-testid="paused-banner">
      <h2 id="paused-heading" className="banner-title">
        {paused.length === 1 ? 'A provider is paused' : `${paused.length} providers are paused`}
      </h2>
      <ul className="banner-list">
        {paused.map((p) => (
          <li key={p.name}>
            <span>
              <strong>{p.name}</strong> paused <Time date={p.pausedAt} />:{' '}
              {isPauseReason(p.reason) ? REASONS[p.reason] : p.reason}.{' '}
              {p.resumeAt ? (
                <span>
                  Resumes on its own <Time date={p.resumeAt} />.
                </span>
              ) : p.resumable ? (
                <span>Jobs wait until it is resumed.</span>
              ) : (
                <span>Jobs wait until an operator resumes it.</span>
              )}
            </span>
            {p.resumable ? <ResumeButton provider={p.name} /> : null}
          </li>
        ))}
      </ul>
    </section>
  );
}
