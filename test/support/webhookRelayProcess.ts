import { readFileSync } from 'node:fs';
import { createPool } from '../../db/pool';
import { createWebhookRelay } from '../../worker/webhookRelay';
import { FAST_SCHEDULE } from './webhookFixtures';

/**
 * A webhook relay as its own process, for the crash tests: `npx tsx test/support/webhookRelayProcess.ts`.
 * Environment: DATABASE_URL, QUIRE_SECRET_KEY, QUIRE_WEBHOOK_ALLOW_HOSTS, RELAY_CA_FILE,
 * RELAY_LEASE_MS. With RELAY_HANG_BEFORE_SEND=1 every claimed delivery prints
 * `claimed <eventId>` and then waits forever, so the test can SIGKILL the process exactly
 * between the commit of fan-out and claim and the HTTP send. Logs are JSON lines on stdout.
 */
const env = process.env;
const pool = createPool(env.DATABASE_URL!, 4);
const hang = env.RELAY_HANG_BEFORE_SEND === '1';
const line = (level: string) => (object: Record<string, unknown>, message?: string) => {
  process.stdout.write(`${JSON.stringify({ level, ...object, message })}\n`);
};

const relay = createWebhookRelay({
  pool,
  secretKey: env.QUIRE_SECRET_KEY!,
  allowHosts: env.QUIRE_WEBHOOK_ALLOW_HOSTS,
  logger: { debug: () => {}, info: line('info'), warn: line('warn'), error: line('error') },
  ca: env.RELAY_CA_FILE ? readFileSync(env.RELAY_CA_FILE, 'utf8') : undefined,
  leaseMs: Number(env.RELAY_LEASE_MS ?? 2000),
  pollIntervalMs: 100,
  schedule: FAST_SCHEDULE,
  concurrency: 4,
  onBeforeSend: hang
    ? async ({ eventId }) => {
        process.stdout.write(`claimed ${eventId}\n`);
        await new Promise(() => {});
      }
    : undefined,
});

await relay.start();
process.stdout.write('relay ready\n');
process.on('SIGTERM', () => {
  void relay.stop({ graceMs: 1000 }).then(() => pool.end().then(() => process.exit(0)));
});
