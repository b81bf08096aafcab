import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ProviderError } from '../../core/failures';
import type { CallContext, LineBox, MediaInput } from '../../core/provider';
import { auditInvariants } from '../../db/audit';
import { createProviderRegistry } from '../../providers/registry';
import { SimulatedProvider } from '../../providers/simulated';
import type { QuireWorker } from '../../worker/createWorker';
import { createLogger } from '../../worker/logger';
import { createTestQuire, type TestQuire } from '../support/quire';

/**
 * Q4 O2: a provider that echoes secrets and transcript text in its errors. Nothing of it
 * may reach the database or the logs: every stored and logged error is redacted.
 */
const SECRETS = [
  'sk-live-4f9a8b7c6d5e4f3a2b1c0d9e',
  'Bearer abcdefghijklmnop1234567890',
  'postgres://admin:hunter2@db:5432/x',
];

const LEAK_SEED = 'leak-on-segment';

class LeakyProvider extends SimulatedProvider {
  override async segmentPage(image: MediaInput, ctx: CallContext) {
    // A seed the job chooses marks the leaking run (X5: a job carries known options only).
    if ((ctx.options.simulated as { seed?: string } | undefined)?.seed === LEAK_SEED) {
      throw new ProviderError('image', `cannot decode: token=${SECRETS[0]} ${SECRETS[1]}`);
    }
    return super.segmentPage(image, ctx);
  }

  override async recognizeLine(image: MediaInput, line: LineBox, ctx: CallContext) {
    if (ctx.segmentIndex === 1) {
      throw new ProviderError(
        'internal',
        `upstream 500: key=${SECRETS[0]} auth ${SECRETS[1]} via ${SECRETS[2]}`,
      );
    }
    return super.recognizeLine(image, line, ctx);
  }
}

let quire: TestQuire;
let worker: QuireWorker;
let running: Promise<void>;
let ws: number;
let logs = '';

beforeAll(async () => {
  quire = await createTestQuire({}, createProviderRegistry([new LeakyProvider({}, 'simulated')]));
  ws = await quire.workspace();
  const sink = new Writable({
    write(chunk, _encoding, done) {
      logs += chunk;
      done();
    },
  });
  const { createQuireWorker } = await import('../../worker/createWorker');
  worker = await createQuireWorker({
    config: quire.config,
    pool: quire.db.pool,
    providers: quire.providers,
    logger: createLogger('quire-worker', 'debug', sink),
    connection: quire.connection,
    client: quire.client,
    blobStore: quire.blobStore,
    workflowBundle: { codePath: process.env.QUIRE_TEST_WORKFLOW_BUNDLE ?? '' },
  });
  running = worker.run();
});

afterAll(async () => {
  worker?.shutdown();
  await running;
  await quire?.close();
});

describe('redaction (Q4, O2)', () => {
  it('Q4 secrets planted in provider errors never reach the database or the logs', async () => {
    const pageId = await quire.page(ws);
    const job = await quire.client.startJob({
      workspaceId: ws,
      pageId,
      options: { simulated: { lines: 3 } },
    });
    // Line 1 fails every attempt; lines 0 and 2 succeed: a partial commit (J2).
    expect((await quire.temporal.workflow.getHandle(job.workflowId).result()).status).toBe(
      'completed',
    );
    const dump = await quire.db.pool.query(
      `SELECT coalesce(string_agg(t::text, ' '), '') AS everything FROM (
         SELECT row_to_json(a)::text AS t FROM transcription_job_attempts a
         UNION ALL SELECT row_to_json(j)::text FROM transcription_jobs j
         UNION ALL SELECT row_to_json(e)::text FROM event_outbox e
         UNION ALL SELECT row_to_json(c)::text FROM provider_calls c) rows`,
    );
    const everything = dump.rows[0].everything as string;
    expect(logs.length).toBeGreaterThan(0);
    expect(logs).toContain('segment failed');
    expect(logs).toContain('"errorClass":"internal"');
    for (const secret of [...SECRETS, 'hunter2', 'sk-live', 'abcdefghijklmnop1234567890']) {
      expect(everything).not.toContain(secret);
      expect(logs).not.toContain(secret);
    }
    // A failure that travels through Temporal: the history carries only the redacted message.
    const failing = await quire.client.startJob({
      workspaceId: ws,
      pageId: await quire.page(ws),
      options: { simulated: { seed: LEAK_SEED } },
    });
    const outcome = await quire.temporal.workflow.getHandle(failing.workflowId).result();
    expect(outcome).toMatchObject({ status: 'failed', errorCategory: 'image' });
    const history = JSON.stringify(
      await quire.temporal.workflow.getHandle(failing.workflowId).fetchHistory(),
    );
    expect(history).toContain('redacted');
    for (const secret of SECRETS) expect(history).not.toContain(secret);
    // Transcript text is never logged either.
    expect(logs).not.toMatch(/line 1 [a-z]+ [a-z]+/);
    expect(await auditInvariants(quire.db.pool)).toEqual([]);
  });
});
