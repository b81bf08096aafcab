import { parseArgs } from 'node:util';
import { loadConfig, requireSecretKeys } from '../core/config';
import { auditInvariants } from '../db/audit';
import { ensureDatabase, migrate } from '../db/migrate';
import { createPool } from '../db/pool';
import { resealWebhookSecrets } from '../db/webhookSecrets';
import { createWorkspace } from '../db/workspaces';

/**
 * `quire admin <command>`:
 *   create-workspace --name N   prints {"workspaceId":..,"apiKey":".."} as one JSON line
 *   audit                       runs the invariant auditor; exit 1 when anything is wrong
 *   reseal-webhook-secrets      D1 rotation: seals every webhook secret under the newest key
 */
const USAGE =
  'usage: quire admin create-workspace --name NAME | quire admin audit | quire admin reseal-webhook-secrets';

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  const config = loadConfig();
  await ensureDatabase(config.DATABASE_URL);
  await migrate(config.DATABASE_URL);
  const pool = createPool(config.DATABASE_URL, 2);
  try {
    switch (command) {
      case 'create-workspace': {
        const { values } = parseArgs({ args: rest, options: { name: { type: 'string' } } });
        const name = values.name?.trim();
        if (!name || name.length > 200) {
          process.stderr.write(`--name is required (1-200 characters)\n${USAGE}\n`);
          return 2;
        }
        const { workspace, apiKey } = await createWorkspace(pool, name);
        process.stdout.write(`${JSON.stringify({ workspaceId: workspace.id, apiKey })}\n`);
        return 0;
      }
      case 'audit': {
        const violations = await auditInvariants(pool, { maxAttempts: config.QUIRE_MAX_ATTEMPTS });
        process.stdout.write(`${JSON.stringify({ violations })}\n`);
        return violations.length === 0 ? 0 : 1;
      }
      case 'reseal-webhook-secrets': {
        // Every key of the list opens; the newest seals. Exit 1 when a secret opens with none.
        const counts = await resealWebhookSecrets(pool, requireSecretKeys(config));
        process.stdout.write(`${JSON.stringify(counts)}\n`);
        return counts.unopened === 0 ? 0 : 1;
      }
      default:
        process.stderr.write(`${USAGE}\n`);
        return 2;
    }
  } finally {
    await pool.end();
  }
}

process.exitCode = await main(process.argv.slice(2));
