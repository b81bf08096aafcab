import { loadConfig } from '../core/config';
import { ensureDatabase, migrate } from '../db/migrate';

/** `npm run migrate`: creates the database when missing and applies pending migrations. */
const config = loadConfig();
await ensureDatabase(config.DATABASE_URL);
const applied = await migrate(config.DATABASE_URL);
process.stdout.write(`${JSON.stringify({ applied })}\n`);
