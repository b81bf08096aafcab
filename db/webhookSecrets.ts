import { openSecret, sealSecret } from '../core/secretBox';
import { openWithAnyKey } from '../core/secretKeys';
import { type Pool, type Queryable, withTransaction } from './pool';
import type { ClaimedDelivery } from './webhooks';

/**
 * Webhook secrets at rest under the installation's keys (D1): opened with any key of the
 * list, sealed with the first; a secret no key opens is a configuration fault that spends no
 * delivery attempt; after a rotation every secret can be sealed again under the new key.
 */

/**
 * The clear secret of a claimed delivery, for signing only. D1: any of the installation's keys
 * may have sealed it (newest first); none opening is a `SecretKeyMismatchError`.
 */
export function openDeliverySecret(
  secretKeys: string | readonly string[],
  claimed: ClaimedDelivery,
): string {
  const keys = typeof secretKeys === 'string' ? [secretKeys] : secretKeys;
  return openWithAnyKey(keys, (key) =>
    openSecret(key, claimed.sealedSecret, claimed.subscriptionId),
  );
}

/**
 * D1: a claimed delivery whose secret this relay cannot open goes back to the queue for a
 * relay that can: the claim's count is undone (no attempt is logged or spent), its claim is
 * released, and it is due again after `retryInMs`. Only this claim is undone: a delivery
 * claimed again meanwhile is left alone.
 */
export async function deferUnopenedDelivery(
  db: Queryable,
  claimed: Pick<ClaimedDelivery, 'deliveryId' | 'attemptCount' | 'attemptNumber'>,
  retryInMs: number,
): Promise<void> {
  await db.query(
    `UPDATE webhook_deliveries
        SET attempt_count = $2, claimed_at = NULL,
            next_attempt_at = now() + make_interval(secs => $4::double precision / 1000),
            last_error = 'the subscription secret does not open with this relay''s QUIRE_SECRET_KEY (configuration fault, not counted)',
            updated_at = now()
      WHERE id = $1 AND status = 'pending' AND attempt_count = $3`,
    [claimed.deliveryId, claimed.attemptCount, claimed.attemptNumber, retryInMs],
  );
}

/**
 * D1 rotation, last step: every subscription secret sealed again under the newest key, so
 * older keys can leave the list. Idempotent; a secret no key opens is left as it is and
 * counted (its subscription must be re-created with its secret).
 */
export async function resealWebhookSecrets(
  pool: Pool,
  keys: readonly string[],
): Promise<{ resealed: number; current: number; unopened: number }> {
  const [newest] = keys;
  if (newest === undefined) throw new Error('no secret key');
  const counts = { resealed: 0, current: 0, unopened: 0 };
  await withTransaction(pool, async (client) => {
    const { rows } = await client.query<{ id: string; secret_ciphertext: Buffer }>(
      'SELECT id, secret_ciphertext FROM webhook_subscriptions ORDER BY id FOR UPDATE',
    );
    for (const row of rows) {
      try {
        openSecret(newest, row.secret_ciphertext, row.id);
        counts.current += 1;
        continue;
      } catch {
        // Sealed under an older key, or under none of ours.
      }
      let secret: string;
      try {
        secret = openWithAnyKey(keys, (key) => openSecret(key, row.secret_ciphertext, row.id));
      } catch {
        counts.unopened += 1;
        continue;
      }
      await client.query('UPDATE webhook_subscriptions SET secret_ciphertext = $2 WHERE id = $1', [
        row.id,
        sealSecret(newest, secret, row.id),
      ]);
      counts.resealed += 1;
    }
  });
  return counts;
}
