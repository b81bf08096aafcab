/**
 * Q4: the first pause of a provider's episode POSTs once to the configured notify URL.
 * The body is fixed text naming only the provider and the reason: never a title, a
 * transcript, a provider error body or the episode's detail. It never throws: a notification
 * that cannot be sent must not disturb the pause it reports.
 *
 * Once per episode is decided in Postgres (`claimPauseNotification`) before sending, so many
 * workers pausing the same provider at once send one message; a send that fails is not
 * retried (at most once, by design: a lost notice beats a storm of them).
 */
import { isPauseReason, type PauseReason } from '../core/failures';
import type { Pool } from '../db/pool';
import { claimPauseNotification } from '../db/providerState';

export interface NotifyPauseArgs {
  url: string | undefined;
  provider: string;
  reason: PauseReason;
  episode: number;
  /** M3: the workspace of a pause of its own credentials (not in the text); null or absent: the installation's. */
  workspaceId?: number | null;
  fetchImpl?: typeof fetch;
  /** Default 5 s. */
  timeoutMs?: number;
}

export type NotifyResult =
  | { sent: true; status: number }
  | {
      sent: false;
      why: 'no-url' | 'already-notified' | 'claim-failed' | 'http-status' | 'network' | 'timeout';
      status?: number;
    };

/** Provider names are configuration, but the text stays plain whatever they contain. */
function plainName(provider: string): string {
  const cleaned = provider.replace(/[^A-Za-z0-9._-]/g, '').slice(0, 64);
  return cleaned || 'unknown';
}

export function pauseNoticeText(provider: string, reason: PauseReason): string {
  return `Quire paused provider ${plainName(provider)}: ${isPauseReason(reason) ? reason : 'unknown'}`;
}

/** Sends one pause notice. Never throws; the result never carries the URL. */
export async function notifyPause(args: NotifyPauseArgs): Promise<NotifyResult> {
  if (!args.url) return { sent: false, why: 'no-url' };
  const fetchImpl = args.fetchImpl ?? fetch;
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), args.timeoutMs ?? 5_000);
  try {
    // `{"text": ...}` is what chat incoming webhooks (Slack, Mattermost, Rocket.Chat) read.
    const body = JSON.stringify({ text: pauseNoticeText(args.provider, args.reason) });
    const response = await fetchImpl(args.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
      signal: controller.signal,
      redirect: 'manual',
    });
    await response.body?.cancel().catch(() => {});
    if (response.status >= 200 && response.status < 300)
      return { sent: true, status: response.status };
    return { sent: false, why: 'http-status', status: response.status };
  } catch {
    return { sent: false, why: controller.signal.aborted ? 'timeout' : 'network' };
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Claims the episode's notification, then sends it. Only the one caller that wins the claim
 * sends; with no URL configured nothing is claimed or sent.
 */
export async function notifyPauseOnce(pool: Pool, args: NotifyPauseArgs): Promise<NotifyResult> {
  if (!args.url) return { sent: false, why: 'no-url' };
  let claimed: boolean;
  try {
    claimed = await claimPauseNotification(
      pool,
      args.provider,
      args.episode,
      args.workspaceId ?? null,
    );
  } catch {
    return { sent: false, why: 'claim-failed' };
  }
  if (!claimed) return { sent: false, why: 'already-notified' };
  return notifyPause(args);
}
