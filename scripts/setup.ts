import { loadConfig } from '../core/config';
import { ensureDatabase, migrate } from '../db/migrate';
import { ensurePostgres } from './lib/postgres';
import { findOrBuildTemporal } from './lib/temporal';

/** `quire setup`: Postgres up, database migrated, the Temporal CLI found or built. */
const config = loadConfig();
await ensurePostgres(config.DATABASE_URL);
await ensureDatabase(config.DATABASE_URL);
const applied = await migrate(config.DATABASE_URL);
const temporal = findOrBuildTemporal();
process.stdout.write(`${JSON.stringify({ migrationsApplied: applied, temporal })}\n`);
