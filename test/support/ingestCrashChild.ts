import { createLocalBlobStore } from '../../blobs';
import { createPool } from '../../db/pool';
import { INGEST_STEPS, type IngestStep, ingestBatch } from '../../ingest/batch';
import { file, flac, png, uploadRequest } from './uploadFixtures';

/**
 * A real ingest in its own process, for the U2 chaos tests. With QUIRE_INGEST_CRASH_AT set
 * to a step, it announces `CRASH_POINT <step>` on stdout when the ingest reaches that step
 * (the Nth time, QUIRE_INGEST_CRASH_OCCURRENCE) and waits there for the parent's SIGKILL.
 * Without it, it prints the batch result and exits.
 */
const env = (name: string) => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is required`);
  return value;
};

const crashAt = process.env.QUIRE_INGEST_CRASH_AT as IngestStep | undefined;
if (crashAt && !INGEST_STEPS.includes(crashAt)) throw new Error(`unknown crash point ${crashAt}`);
const occurrence = Number(process.env.QUIRE_INGEST_CRASH_OCCURRENCE ?? '1');
let seen = 0;

const pool = createPool(env('DATABASE_URL'), 2);
const result = await ingestBatch(
  {
    pool,
    blobStore: createLocalBlobStore(env('QUIRE_BLOB_DIR')),
    onStep: async (step) => {
      if (step !== crashAt || ++seen !== occurrence) return;
      process.stdout.write(`CRASH_POINT ${step}\n`);
      await new Promise(() => setInterval(() => {}, 1000));
    },
  },
  Number(env('QUIRE_WORKSPACE_ID')),
  uploadRequest([file(png(64, 48)), file(flac(5000))]),
);
process.stdout.write(`RESULT ${JSON.stringify(result)}\n`);
await pool.end();
