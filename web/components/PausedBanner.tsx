import { isPauseReason, type PauseReason } from '@quire/core/failures';
import { getProviderStates } from '@quire/db/providerState';
import { pool } from '@quire/web/lib/server';
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
 * Q3: shown on every page while any provider's queue is paused, with the reason and, for the
 * pauses only an operator can lift (credit, auth), a Resume button.
 */
export async function PausedBanner() {
  let paused: Awaited<ReturnType<typeof getProviderStates>>;
  try {
    paused = (await getProviderStates(pool())).filter((s) => s.status === 'paused');
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
          <li key={p.provider}>
            <span>
              <strong>{p.provider}</strong> paused <Time date={p.paused_at} />:{' '}
              {isPauseReason(p.reason) ? REASONS[p.reason] : p.reason}.{' '}
              {p.resume_at ? (
                <span>
                  Resumes on its own <Time date={p.resume_at} />.
                </span>
              ) : (
                <span>Jobs wait until an operator resumes it.</span>
              )}
            </span>
            <ResumeButton provider={p.provider} />
          </li>
        ))}
      </ul>
    </section>
  );
}
