import { randomUUID } from 'node:crypto';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { sweepStrandedEngineJobs } from '../../activities/maintenance';
import type { CallContext } from '../../core/provider';
import { AsyncSpeechProvider } from '../../providers/asyncSpeech';
import { OpenAiAudioProvider } from '../../providers/openaiAudio';
import { createProviderRegistry } from '../../providers/registry';
import { createTestDatabase, type TestDatabase } from '../support/db';
import {
  answers,
  type FakeProviderServer,
  JOBS_DELETE,
  startFakeProviderServer,
} from '../support/fakeProviderServer';
import { seedPage } from '../support/pages';

const HOUR = 60 * 60_000;
let db: TestDatabase;
let fake: FakeProviderServer;
let workspaceId: number;
let dir: string;
let audioPath: string;

const ctx = (): CallContext => ({
  signal: new AbortController().signal,
  language: 'en',
  options: {},
  callKey: 'sweep-test',
});

beforeAll(async () => {
  db = await createTestDatabase();
  const ws = await db.pool.query(`INSERT INTO workspaces (name) VALUES ('sweep') RETURNING id`);
  workspaceId = ws.rows[0].id;
  dir = await mkdtemp(path.join(os.tmpdir(), 'quire-sweep-test-'));
  audioPath = path.join(dir, 'a.wav');
  await writeFile(audioPath, Buffer.from('RIFF fake audio'));
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
  await db.drop();
});

beforeEach(async () => {
  fake = await startFakeProviderServer();
  await db.pool.query('DELETE FROM engine_jobs');
});

afterEach(async () => {
  await fake.close();
});

/** A Quire job in the given status on a page of its own. */
async function quireJob(status: 'pending' | 'running' | 'failed' | 'canceled'): Promise<string> {
  const page = await seedPage(db.pool, { workspaceId, itemId: 'item', kind: 'audio' });
  const id = randomUUID();
  const ended = status === 'pending' || status === 'running' ? null : new Date();
  await db.pool.query(
    `INSERT INTO transcription_jobs (id, workspace_id, page_id, workflow_id, status, provider, snapshot, input_revision, ended_at)
     VALUES ($1, $2, $3, $4, $5, 'async-speech', '{}', 0, $6)`,
    [id, workspaceId, page.pageId, `wf-${id}`, status, ended],
  );
  return id;
}

async function record(provider: string, engineJobId: string, jobId: string, createdAt: Date) {
  await db.pool.query(
    `INSERT INTO engine_jobs (provider, engine_job_id, job_id, created_at) VALUES ($1, $2, $3, $4)`,
    [provider, engineJobId, jobId, createdAt],
  );
}

async function deletedAt(provider: string, engineJobId: string): Promise<Date | null> {
  const { rows } = await db.pool.query(
    `SELECT deleted_at FROM engine_jobs WHERE provider = $1 AND engine_job_id = $2`,
    [provider, engineJobId],
  );
  return rows[0].deleted_at;
}

describe('O3 stranded engine-job sweep', () => {
  it('O3 deletes old engine jobs of ended Quire jobs, keeps active, young and unknown-provider ones', async () => {
    const speech = new AsyncSpeechProvider({ baseUrl: fake.url });
    const registry = createProviderRegistry([speech]);
    const now = new Date();
    const submit = async () =>
      (await speech.submitAudio({ path: audioPath, mediaType: 'audio/wav' }, ctx())).engineJobId;

    const oldEnded = await submit();
    await record(
      'async-speech',
      oldEnded,
      await quireJob('failed'),
      new Date(now.getTime() - 7 * HOUR),
    );
    const oldCanceled = await submit();
    await record(
      'async-speech',
      oldCanceled,
      await quireJob('canceled'),
      new Date(now.getTime() - 30 * HOUR),
    );
    const oldActive = await submit();
    await record(
      'async-speech',
      oldActive,
      await quireJob('running'),
      new Date(now.getTime() - 8 * HOUR),
    );
    const oldPending = await submit();
    await record(
      'async-speech',
      oldPending,
      await quireJob('pending'),
      new Date(now.getTime() - 8 * HOUR),
    );
    const youngEnded = await submit();
    await record(
      'async-speech',
      youngEnded,
      await quireJob('failed'),
      new Date(now.getTime() - 5 * HOUR),
    );
    await record(
      'gone-provider',
      'x1',
      await quireJob('failed'),
      new Date(now.getTime() - 9 * HOUR),
    );
    // The fake's own clock says these were all made just now, so listing finds none old.

    const result = await sweepStrandedEngineJobs({ pool: db.pool, providers: registry, now });
    expect(result).toEqual({ deleted: 2, unrecordedDeleted: 0, skipped: 1, errors: [] });
    expect(fake.speechJobs.get(oldEnded)!.deleted).toBe(true);
    expect(fake.speechJobs.get(oldCanceled)!.deleted).toBe(true);
    for (const kept of [oldActive, oldPending, youngEnded]) {
      expect(fake.speechJobs.get(kept)!.deleted).toBe(false);
      expect(await deletedAt('async-speech', kept)).toBeNull();
    }
    expect(await deletedAt('async-speech', oldEnded)).toEqual(now);

    // Idempotent: a second run finds nothing more to do.
    expect(await sweepStrandedEngineJobs({ pool: db.pool, providers: registry, now })).toEqual({
      deleted: 0,
      unrecordedDeleted: 0,
      skipped: 1,
      errors: [],
    });
  });

  it('O3 listing providers: old remote jobs no active job references are deleted, including unrecorded ones', async () => {
    const speech = new AsyncSpeechProvider({ baseUrl: fake.url });
    const submit = async () =>
      (await speech.submitAudio({ path: audioPath, mediaType: 'audio/wav' }, ctx())).engineJobId;
    const unrecorded = await submit();
    const referenced = await submit();
    await record('async-speech', referenced, await quireJob('running'), new Date());
    const young = await submit();
    const now = new Date(Date.now() + 7 * HOUR);
    fake.speechJobs.get(young)!.createdAt = new Date(now.getTime() - HOUR);

    const result = await sweepStrandedEngineJobs({ pool: db.pool, providers: [speech], now });
    expect(result).toMatchObject({ unrecordedDeleted: 1, errors: [] });
    expect(fake.speechJobs.get(unrecorded)!.deleted).toBe(true);
    expect(fake.speechJobs.get(referenced)!.deleted).toBe(false);
    expect(fake.speechJobs.get(young)!.deleted).toBe(false);
  });

  it('O3 on-disk engine jobs (whisper adapter) are listed and removed when stranded', async () => {
    const workDir = await mkdtemp(path.join(dir, 'whisper-'));
    const whisper = new OpenAiAudioProvider({ baseUrl: fake.url, workDir, timeoutMs: 2_000 });
    const stranded = await whisper.submitAudio({ path: audioPath, mediaType: 'audio/wav' }, ctx());
    const kept = await whisper.submitAudio({ path: audioPath, mediaType: 'audio/wav' }, ctx());
    await record('whisper', kept.engineJobId, await quireJob('pending'), new Date());
    const now = new Date(Date.now() + 7 * HOUR);
    const result = await sweepStrandedEngineJobs({ pool: db.pool, providers: [whisper], now });
    expect(result).toMatchObject({ unrecordedDeleted: 1, errors: [] });
    expect(await readdir(workDir)).toEqual([kept.engineJobId]);
    expect(await readdir(workDir)).not.toContain(stranded.engineJobId);
  });

  it('O3 a failed delete is reported (redacted) and left for the next run, which finishes it', async () => {
    const speech = new AsyncSpeechProvider({
      baseUrl: fake.url,
      apiKey: 'sk-live-abcdefghijklmnopqrstuvwx',
    });
    const { engineJobId } = await speech.submitAudio(
      { path: audioPath, mediaType: 'audio/wav' },
      ctx(),
    );
    const now = new Date();
    await record(
      'async-speech',
      engineJobId,
      await quireJob('failed'),
      new Date(now.getTime() - 7 * HOUR),
    );
    fake.script(JOBS_DELETE, {
      status: 503,
      body: { error: { message: 'down; your key sk-live-abcdefghijklmnopqrstuvwx' } },
    });
    const first = await sweepStrandedEngineJobs({ pool: db.pool, providers: [speech], now });
    expect(first.deleted).toBe(0);
    expect(first.errors).toHaveLength(1);
    expect(first.errors[0]).not.toContain('abcdefghijklmnop');
    expect(await deletedAt('async-speech', engineJobId)).toBeNull();
    const second = await sweepStrandedEngineJobs({ pool: db.pool, providers: [speech], now });
    expect(second).toMatchObject({ deleted: 1, errors: [] });
  });

  it('O3 concurrent sweeps delete each stranded job once between them and never fail', async () => {
    const speech = new AsyncSpeechProvider({ baseUrl: fake.url });
    const now = new Date();
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) {
      const { engineJobId } = await speech.submitAudio(
        { path: audioPath, mediaType: 'audio/wav' },
        ctx(),
      );
      await record(
        'async-speech',
        engineJobId,
        await quireJob('canceled'),
        new Date(now.getTime() - 10 * HOUR),
      );
      ids.push(engineJobId);
    }
    // Slow deletes widen the race window.
    fake.script(
      JOBS_DELETE,
      ...ids.map(() => ({ delayMs: 50, answer: { status: 204, body: '' } })),
    );
    const results = await Promise.all(
      [0, 1, 2].map(() => sweepStrandedEngineJobs({ pool: db.pool, providers: [speech], now })),
    );
    expect(results.flatMap((r) => r.errors)).toEqual([]);
    expect(results.reduce((sum, r) => sum + r.deleted, 0)).toBe(6);
    for (const id of ids) expect(await deletedAt('async-speech', id)).not.toBeNull();
  });

  it('O3 a provider whose listing fails does not stop the sweep', async () => {
    const broken = new AsyncSpeechProvider({ baseUrl: fake.url, timeoutMs: 200 });
    fake.script('GET /jobs', answers.hang());
    const result = await sweepStrandedEngineJobs({
      pool: db.pool,
      providers: [broken],
      now: new Date(),
    });
    expect(result.errors).toHaveLength(1);
    expect(result.errors[0]).toMatch(/async-speech/);
  });
});
