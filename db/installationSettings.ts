import { type Pool, withTransaction } from './pool';

/**
 * D8: one installation, one configuration, beyond the key (D1). The settings every process
 * must share (the blob store's identity, the Temporal namespace) are recorded by the first
 * process to start; every later one compares its own with them and is refused, naming the
 * setting, when one differs. A setting none recorded yet (an older installation, a new
 * setting) is recorded by the first process that has it.
 */
const SETTINGS_CHECK_LOCK = 7_401_119_018;

export type SettingsCheck =
  | { ok: true; recorded: string[] }
  | { ok: false; setting: string; message: string };

export async function checkInstallationSettings(
  pool: Pool,
  settings: Readonly<Record<string, string>>,
): Promise<SettingsCheck> {
  return withTransaction(pool, async (client) => {
    await client.query('SELECT pg_advisory_xact_lock($1)', [SETTINGS_CHECK_LOCK]);
    const { rows } = await client.query<{ name: string; value: string }>(
      'SELECT name, value FROM installation_settings',
    );
    const recorded = new Map(rows.map((r) => [r.name, r.value]));
    for (const [name, value] of Object.entries(settings)) {
      const theirs = recorded.get(name);
      if (theirs !== undefined && theirs !== value) {
        return {
          ok: false,
          setting: name,
          message: `${name} is ${JSON.stringify(value)} here, but this installation's processes use ${JSON.stringify(theirs)} (recorded in PostgreSQL by the first process): start every process with the same ${name}`,
        };
      }
    }
    const missing = Object.entries(settings).filter(([name]) => !recorded.has(name));
    for (const [name, value] of missing) {
      await client.query(
        'INSERT INTO installation_settings (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING',
        [name, value],
      );
    }
    return { ok: true, recorded: missing.map(([name]) => name) };
  });
}
