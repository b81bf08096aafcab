/**
 * W2: where a webhook delivery stands. `pending` until it succeeds or the relay gives up:
 * `failed` when the receiver refused it for good (410 disables the subscription), `dead`
 * once the retry schedule's window closed. A delivery the relay gave up on can be replayed.
 */
export const DELIVERY_STATUSES = ['pending', 'succeeded', 'failed', 'dead'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

/** The deliveries the relay gave up on: counted as failed in the console, replayable (W2). */
export const GIVEN_UP_DELIVERY_STATUSES = [
  'failed',
  'dead',
] as const satisfies readonly DeliveryStatus[];

export function isGivenUpDelivery(status: string): boolean {
  return (GIVEN_UP_DELIVERY_STATUSES as readonly string[]).includes(status);
}
