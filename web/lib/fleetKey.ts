import { ConfigError, requireSecretKeys } from '@quire/core/config';
import { checkInstallationKey } from '@quire/db/installationKey';
import { config, pool } from './server';

/** Exit status of a process refused for its configuration (sysexits EX_CONFIG). */
const EXIT_CONFIG = 78;

/**
 * D1 at web start: no key, or a key that is not the installation's, ends the process with a
 * message naming the variable. A database that does not answer yet is not a verdict: the
 * process starts and `/readyz` reports the key once PostgreSQL answers.
 */
export async function checkWebKey(): Promise<void> {
  let message: string | undefined;
  try {
    const keys = requireSecretKeys(config());
    const check = await checkInstallationKey(pool(), keys);
    if (!check.ok) message = check.message;
  } catch (error) {
    if (error instanceof ConfigError) message = error.message;
    // Anything else (PostgreSQL down): readiness says so until it answers.
  }
  if (message === undefined) return;
  process.stderr.write(
    `${JSON.stringify({ level: 'fatal', msg: 'web refused to start', error: message })}\n`,
  );
  process.stderr.write(`quire-web: ${message}\n`);
  process.exit(EXIT_CONFIG);
}
