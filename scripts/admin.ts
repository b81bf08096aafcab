import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import { Client } from '@temporalio/client';
import { QuireClient } from '../client';
import { CLI_ACTOR } from '../core/actor';
import { loadConfig, type QuireConfig, requireSecretKeys } from '../core/config';
import { hashPassword, normalizeEmail } from '../core/passwords';
import { isRole } from '../core/roles';
import { createAccount, findAccountByEmail, putMember, setAccountDisabled } from '../db/accounts';
import { auditInvariants } from '../db/audit';
import { listAudit } from '../db/auditLog';
import { createJobStore } from '../db/jobStore';
import { ensureDatabase, migrate } from '../db/migrate';
import {
  resumeProviderRecorded,
  setInstallationControls,
  setWorkspaceControls,
} from '../db/operatorControls';
import { createOperatorKey, listOperatorKeys, revokeOperatorKey } from '../db/operatorKeys';
import { createPool, type Pool, poolTimeoutsFrom } from '../db/pool';
import { resealWebhookSecrets } from '../db/webhookSecrets';
import { createWorkspace } from '../db/workspaces';
import { connectTemporal } from '../net/temporalClient';

/**
 * `quire admin <command>` (npm run admin -- <command>): the installation's own console, run
 * with the database's credentials. Every command prints one JSON line; every change is in the
 * audit log (M4) with the CLI as its actor.
 */
const USAGE = `usage: quire admin <command>
  create-workspace --name NAME             {"workspaceId":..,"apiKey":".."}
  create-operator-key [--label LABEL]      {"operatorKeyId":..,"operatorKey":"qo_.."} (shown once)
  create-account --email E --name N [--operator] [--workspace N --role R]
                                           {"accountId":..,"password":".."} (generated, shown once)
  disable-account --email E | enable-account --email E   R3: disabling ends every session
  list-operator-keys | revoke-operator-key --id N
  set-budget (--workspace N | --global) --micros M|none
  set-quota (--workspace N | --global) --bytes B|none
  set-job-cap --workspace N --cap C|none
  set-providers --workspace N (--enabled a,b,... | --all)
  resume-provider --name PROVIDER
  audit-log [--workspace N] [--limit N]
  audit                                    invariant auditor; exit 1 when anything is wrong
  reseal-webhook-secrets                   D1 rotation: every webhook secret sealed under the newest key`;

class UsageError extends Error {}

/** A count or `none` (lifts the limit); anything else is a usage error. */
function limitValue(raw: string | undefined, flag: string): number | null {
  if (raw === 'none') return null;
  if (raw === undefined || !/^\d{1,15}$/.test(raw)) {
    throw new UsageError(`--${flag} must be a whole number or none`);
  }
  return Number(raw);
}

function workspaceValue(raw: string | undefined): number {
  if (raw === undefined || !/^[1-9]\d{0,14}$/.test(raw)) {
    throw new UsageError('--workspace must be a workspace id');
  }
  return Number(raw);
}

const print = (value: unknown): undefined => {
  process.stdout.write(`${JSON.stringify(value)}\n`);
};

async function withQuireClient<T>(
  config: QuireConfig,
  pool: Pool,
  work: (client: QuireClient) => Promise<T>,
): Promise<T> {
  const connection = await connectTemporal(config, { connectTimeout: 5_000 });
  try {
    const temporal = new Client({ connection, namespace: config.TEMPORAL_NAMESPACE });
    const jobs = createJobStore(pool, {
      fleetMaxOpenWorkflows: config.QUIRE_FLEET_MAX_OPEN_WORKFLOWS,
    });
    return await work(QuireClient.fromConfig(config, temporal, jobs));
  } finally {
    await connection.close();
  }
}

async function run(command: string | undefined, rest: string[], config: QuireConfig, pool: Pool) {
  const options = {
    name: { type: 'string' },
    label: { type: 'string' },
    id: { type: 'string' },
    workspace: { type: 'string' },
    global: { type: 'boolean' },
    micros: { type: 'string' },
    bytes: { type: 'string' },
    cap: { type: 'string' },
    enabled: { type: 'string' },
    all: { type: 'boolean' },
    limit: { type: 'string' },
    email: { type: 'string' },
    operator: { type: 'boolean' },
    role: { type: 'string' },
  } as const;
  const { values } = parseArgs({ args: rest, options, strict: true });
  const scope = () => {
    if (Boolean(values.global) === (values.workspace !== undefined)) {
      throw new UsageError('give either --workspace N or --global');
    }
    return values.global ? null : workspaceValue(values.workspace);
  };
  switch (command) {
    case 'create-workspace': {
      const name = values.name?.trim();
      if (!name || name.length > 200) throw new UsageError('--name is required (1-200 characters)');
      const { workspace, apiKey } = await createWorkspace(pool, name);
      return print({ workspaceId: workspace.id, apiKey });
    }
    case 'create-operator-key': {
      const label = values.label?.trim() || null;
      if (label && label.length > 200) throw new UsageError('--label is at most 200 characters');
      const { id, key } = await createOperatorKey(pool, CLI_ACTOR, label);
      return print({ operatorKeyId: id, operatorKey: key });
    }
    case 'create-account': {
      const email = normalizeEmail(values.email ?? '');
      const name = values.name?.trim();
      if (!email || !name || name.length > 200)
        throw new UsageError('--email and --name are required');
      if (values.role !== undefined && !isRole(values.role)) {
        throw new UsageError('--role is owner, editor, reviewer or viewer');
      }
      const password = randomBytes(15).toString('base64url');
      const account = await createAccount(pool, CLI_ACTOR, {
        email,
        name,
        passwordHash: await hashPassword(password),
        operator: Boolean(values.operator),
      });
      if (values.workspace !== undefined) {
        await putMember(pool, CLI_ACTOR, {
          workspaceId: workspaceValue(values.workspace),
          accountId: account.id,
          role: isRole(values.role) ? values.role : 'viewer',
        });
      }
      return print({ accountId: account.id, password });
    }
    case 'disable-account':
    case 'enable-account': {
      const account = await findAccountByEmail(pool, normalizeEmail(values.email ?? '') ?? '');
      if (!account) throw new UsageError('--email must name an account');
      await setAccountDisabled(pool, CLI_ACTOR, account.id, command === 'disable-account');
      return print({ accountId: account.id, disabled: command === 'disable-account' });
    }
    case 'list-operator-keys':
      return print({ operatorKeys: await listOperatorKeys(pool) });
    case 'revoke-operator-key': {
      if (!values.id || !/^[1-9]\d{0,14}$/.test(values.id)) throw new UsageError('--id N');
      await revokeOperatorKey(pool, CLI_ACTOR, Number(values.id));
      return print({ revoked: Number(values.id) });
    }
    case 'set-budget':
    case 'set-quota': {
      const workspaceId = scope();
      const change =
        command === 'set-budget'
          ? { dailyBudgetMicros: limitValue(values.micros, 'micros') }
          : { quotaBytes: limitValue(values.bytes, 'bytes') };
      const controls =
        workspaceId === null
          ? await setInstallationControls(pool, CLI_ACTOR, change)
          : await setWorkspaceControls(pool, CLI_ACTOR, workspaceId, change);
      return print({ workspaceId, controls });
    }
    case 'set-job-cap': {
      const workspaceId = workspaceValue(values.workspace);
      const cap = limitValue(values.cap, 'cap');
      if (cap === 0) throw new UsageError('--cap must be at least 1 (or none)');
      // The worker's dispatcher is notified at commit and admits what a raised cap allows.
      const controls = await setWorkspaceControls(pool, CLI_ACTOR, workspaceId, {
        activeJobCap: cap,
      });
      return print({ workspaceId, controls });
    }
    case 'set-providers': {
      const workspaceId = workspaceValue(values.workspace);
      if (Boolean(values.all) === (values.enabled !== undefined)) {
        throw new UsageError('give either --enabled a,b,... or --all');
      }
      const enabled = values.all
        ? null
        : (values.enabled ?? '')
            .split(',')
            .map((n) => n.trim())
            .filter(Boolean);
      const controls = await setWorkspaceControls(pool, CLI_ACTOR, workspaceId, {
        enabledProviders: enabled,
      });
      return print({ workspaceId, controls });
    }
    case 'resume-provider': {
      const name = values.name?.trim();
      if (!name) throw new UsageError('--name PROVIDER');
      const result = await withQuireClient(config, pool, (client) =>
        resumeProviderRecorded(pool, CLI_ACTOR, null, name, () => client.resumeProvider(name)),
      );
      return print({ provider: name, ...result });
    }
    case 'audit-log': {
      const workspaceId = values.workspace === undefined ? null : workspaceValue(values.workspace);
      const limit = values.limit === undefined ? 50 : limitValue(values.limit, 'limit');
      return print(await listAudit(pool, { workspaceId, limit: limit ?? 50 }));
    }
    case 'audit': {
      const violations = await auditInvariants(pool, { maxAttempts: config.QUIRE_MAX_ATTEMPTS });
      print({ violations });
      return violations.length === 0 ? undefined : 1;
    }
    case 'reseal-webhook-secrets': {
      // Every key of the list opens; the newest seals. Exit 1 when a secret opens with none.
      const counts = await resealWebhookSecrets(pool, requireSecretKeys(config));
      print(counts);
      return counts.unopened === 0 ? undefined : 1;
    }
    default:
      throw new UsageError(command ? `unknown command ${command}` : 'no command');
  }
}

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  const config = loadConfig();
  await ensureDatabase(config.DATABASE_URL);
  await migrate(config.DATABASE_URL);
  const pool = createPool(config.DATABASE_URL, 2, poolTimeoutsFrom(config));
  try {
    return (await run(command, rest, config, pool)) ?? 0;
  } catch (error) {
    if (error instanceof UsageError || (error as { code?: string }).code?.startsWith('ERR_PARSE')) {
      process.stderr.write(`${(error as Error).message}\n${USAGE}\n`);
      return 2;
    }
    // Refusals of the domain (unknown workspace or provider, a bound) keep their stable code.
    const refused = error as { code?: unknown; kind?: unknown; message?: string };
    if (typeof refused.code === 'string' && typeof refused.kind === 'string') {
      process.stderr.write(
        `${JSON.stringify({ error: { code: refused.code, message: refused.message } })}\n`,
      );
      return 1;
    }
    throw error;
  } finally {
    await pool.end();
  }
}

process.exitCode = await main(process.argv.slice(2));
