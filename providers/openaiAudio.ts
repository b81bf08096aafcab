/**
 * OpenAI-compatible audio transcription (Q2): `POST {baseUrl}/v1/audio/transcriptions`,
 * multipart `file`, `model`, `response_format=verbose_json`, `timestamp_granularities[]=segment`,
 * optional `language`. Local Whisper servers (whisper.cpp, faster-whisper, speaches) speak it
 * too: the recommended engine for real recordings.
 *
 * The API is synchronous; Quire's audio calls are not. The mapping:
 * - submitAudio copies the recording into a private directory of its own
 *   (`<workDir>/<engine job id>/`, mode 0700), so our blob may be deleted as soon as the id is
 *   saved, writes `job.json`, and starts the request in the background.
 * - pollAudio answers `running` while the request is in flight, `done` with the segments
 *   (`#t=start,end`) once `result.json` is there. A failed request (`error.json`) is reported
 *   once with its class; the next poll sends the request again from the private copy, because
 *   the next attempt polls the same engine job id.
 * - A worker that restarted (the request died with it) finds the record on disk and sends the
 *   request again, at most `maxLostRestarts` times. An id whose directory is gone is reported
 *   lost: `ProviderError('invalid')`.
 * - deleteAudio aborts the request and removes the directory; idempotent.
 * - listEngineJobs serves the stranded-job sweep (O3).
 */

import { randomUUID } from 'node:crypto';
import { openAsBlob } from 'node:fs';
import { copyFile, mkdir, open, readFile, rename, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Segment } from '../core/annotation';
import { isFailureClass, ProviderError } from '../core/failures';
import type { MediaKind } from '../core/media';
import type {
  AudioEngine,
  AudioPoll,
  CallContext,
  CallCost,
  EngineIdentity,
  MediaInput,
} from '../core/provider';
import { redactError } from '../core/redact';
import { ENGINE_JOB_ID, listOnDiskEngineJobs, throwIfAborted } from './engineSupport';
import { DEFAULT_TIMEOUT_MS, joinUrl, providerJson, unexpectedShape } from './http';
import { offlinePolish } from './polish';

export interface OpenAiAudioOptions {
  /** Registry name; default `whisper`. */
  name?: string;
  /** Without `/v1`, e.g. `http://gpu-box:8000`. */
  baseUrl: string;
  apiKey?: string;
  /** Model when the job names none; default `whisper-1`. */
  model?: string;
  timeoutMs?: number;
  fetchImpl?: typeof fetch;
  /** Where engine jobs live; default os.tmpdir()/quire-openai-audio-<name>. */
  workDir?: string;
  /** How often a request lost with its worker is sent again; default 3. */
  maxLostRestarts?: number;
}

interface JobRecord {
  id: string;
  createdAt: string;
  model: string;
  language?: string;
  mediaType: string;
  fileName: string;
  /** The request now running, if any: which process runs it and since when. */
  runner?: { pid: number; instance: string; startedAt: string; run: number };
  runs: number;
  lostRestarts: number;
}

interface StoredError {
  category: string;
  message: string;
  retryAfterMs?: number;
}

const JOB_ID = ENGINE_JOB_ID;
/** This process, as a runner: tells our own in-flight requests from a dead predecessor's. */
const INSTANCE = randomUUID();

const EXTENSIONS: Record<string, string> = {
  'audio/wav': 'wav',
  'audio/wave': 'wav',
  'audio/x-wav': 'wav',
  'audio/vnd.wave': 'wav',
  'audio/flac': 'flac',
  'audio/x-flac': 'flac',
  'audio/ogg': 'ogg',
  'audio/mpeg': 'mp3',
  'audio/mp3': 'mp3',
  'audio/mp4': 'm4a',
  'audio/x-m4a': 'm4a',
  'audio/webm': 'webm',
};

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Whisper wants ISO 639-1; anything else is left to its language detection. */
export function whisperLanguage(language: string | undefined): string | undefined {
  const primary = (language ?? '').trim().split(/[-_]/)[0]!.toLowerCase();
  if (primary === 'eng') return 'en';
  return /^[a-z]{2}$/.test(primary) ? primary : undefined;
}

/** Segments from a `verbose_json` answer; a shape it does not recognise is `internal`. */
export function parseVerboseJson(
  provider: string,
  json: unknown,
): { segments: Segment[]; duration: number } {
  if (typeof json !== 'object' || json === null)
    throw unexpectedShape(provider, 'answer is not an object');
  const o = json as { segments?: unknown; text?: unknown; duration?: unknown };
  const duration =
    typeof o.duration === 'number' && Number.isFinite(o.duration) ? o.duration : undefined;
  if (Array.isArray(o.segments)) {
    const segments: Segment[] = [];
    for (const raw of o.segments) {
      const s = raw as {
        start?: unknown;
        end?: unknown;
        text?: unknown;
        avg_logprob?: unknown;
        speaker?: unknown;
      };
      if (typeof s?.start !== 'number' || typeof s.end !== 'number' || typeof s.text !== 'string') {
        throw unexpectedShape(provider, 'segment without numeric start/end and text');
      }
      const text = s.text.trim();
      if (text === '') continue;
      const segment: Segment = {
        index: segments.length,
        target: { kind: 't', start: Math.max(0, s.start), end: Math.max(s.start, s.end) },
        text,
      };
      if (typeof s.avg_logprob === 'number')
        segment.confidence = Math.min(1, Math.max(0, Math.exp(s.avg_logprob)));
      if (typeof s.speaker === 'string' && s.speaker !== '') segment.speaker = s.speaker;
      segments.push(segment);
    }
    const last = segments[segments.length - 1];
    return { segments, duration: duration ?? (last?.target.kind === 't' ? last.target.end : 0) };
  }
  // A server that ignores verbose_json: one segment over the whole recording.
  if (typeof o.text === 'string' && duration !== undefined) {
    const text = o.text.trim();
    const segments: Segment[] = text
      ? [{ index: 0, target: { kind: 't', start: 0, end: duration }, text }]
      : [];
    return { segments, duration };
  }
  throw unexpectedShape(provider, 'no segments in the answer');
}

export class OpenAiAudioProvider implements AudioEngine {
  readonly name: string;
  readonly workDir: string;
  private readonly options: OpenAiAudioOptions;
  private readonly inFlight = new Map<string, AbortController>();

  constructor(options: OpenAiAudioOptions) {
    this.name = options.name ?? 'whisper';
    this.options = options;
    this.workDir = path.resolve(
      options.workDir ?? path.join(os.tmpdir(), `quire-openai-audio-${this.name}`),
    );
  }

  identity(model?: string): EngineIdentity {
    return { engine: this.name, model: this.modelOf(model), version: 'openai-compatible' };
  }

  async submitAudio(
    audio: MediaInput,
    ctx: CallContext,
  ): Promise<{ engineJobId: string; cost: CallCost }> {
    throwIfAborted(ctx.signal);
    const id = randomUUID();
    const dir = this.jobDir(id);
    await mkdir(dir, { recursive: true, mode: 0o700 });
    try {
      const mediaType = audio.mediaType.split(';')[0]!.trim().toLowerCase();
      const extension =
        EXTENSIONS[mediaType] ?? (path.extname(audio.path).slice(1).toLowerCase() || 'wav');
      const fileName = `audio.${extension.replace(/[^a-z0-9]/g, '') || 'wav'}`;
      try {
        // Our own copy: the blob may be deleted as soon as the engine job id is saved.
        await copyFile(audio.path, path.join(dir, fileName));
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code ?? 'EIO';
        throw new ProviderError('internal', `${this.name}: audio file could not be read (${code})`);
      }
      const record: JobRecord = {
        id,
        createdAt: new Date().toISOString(),
        model: this.modelOf(ctx.model),
        language: whisperLanguage(ctx.language),
        mediaType: mediaType || 'application/octet-stream',
        fileName,
        runs: 0,
        lostRestarts: 0,
      };
      await this.writeJson(dir, 'job.json', record);
      await this.start(record);
      return { engineJobId: id, cost: { units: 0, unit: 'audio_second' } };
    } catch (error) {
      await rm(dir, { recursive: true, force: true });
      throw error;
    }
  }

  async pollAudio(engineJobId: string, ctx: CallContext): Promise<AudioPoll> {
    throwIfAborted(ctx.signal);
    const dir = this.existingJobDir(engineJobId);
    const record = await this.readRecord(engineJobId, dir);
    // Whether a request is in flight is read before its result: a request ends by writing
    // the result and only then leaves `inFlight`, so a poll racing its end finds the result
    // instead of taking the request for lost and paying for it twice.
    const running = this.isRunning(record);
    const result = await this.readJsonFile<{ segments: Segment[]; duration: number }>(
      dir,
      'result.json',
    );
    if (result) {
      return {
        state: 'done',
        segments: result.segments,
        cost: { units: result.duration, unit: 'audio_second' },
      };
    }
    const failed = await this.readJsonFile<StoredError>(dir, 'error.json');
    if (failed) {
      // Reported once: the next poll (the next attempt) sends the request again.
      await this.writeJson(dir, 'job.json', { ...record, runner: undefined });
      await rm(path.join(dir, 'error.json'), { force: true });
      const category = isFailureClass(failed.category) ? failed.category : 'internal';
      throw new ProviderError(category, failed.message, failed.retryAfterMs);
    }
    if (running) return { state: 'running' };
    if (!record.runner) {
      // The last run failed and was reported: send it again.
      await this.start(record);
      return { state: 'running', progress: 0 };
    }
    // The request died with the worker that sent it.
    if (record.lostRestarts >= (this.options.maxLostRestarts ?? 3)) {
      throw new ProviderError('internal', `${this.name}: request lost too often`);
    }
    await this.start({ ...record, lostRestarts: record.lostRestarts + 1 });
    return { state: 'running', progress: 0 };
  }

  async deleteAudio(engineJobId: string, ctx: CallContext): Promise<void> {
    throwIfAborted(ctx.signal);
    const dir = this.existingJobDir(engineJobId);
    this.inFlight.get(engineJobId)?.abort(new Error('engine job deleted'));
    this.inFlight.delete(engineJobId);
    await rm(dir, { recursive: true, force: true });
  }

  polish(
    text: string,
    kind: MediaKind,
    ctx: CallContext,
  ): Promise<{ text: string; cost: CallCost }> {
    return offlinePolish(text, kind, ctx.signal);
  }

  /** Engine jobs on this machine with their age, for the stranded-job sweep (O3). */
  listEngineJobs(): Promise<{ engineJobId: string; createdAt: Date }[]> {
    return listOnDiskEngineJobs(this.workDir);
  }

  private modelOf(model?: string): string {
    return model && model !== 'default' ? model : (this.options.model ?? 'whisper-1');
  }

  private timeoutMs(): number {
    return this.options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  }

  /** In flight here, or in another live process that started it recently enough to still be waiting. */
  private isRunning(record: JobRecord): boolean {
    if (this.inFlight.has(record.id)) return true;
    const runner = record.runner;
    if (!runner) return false;
    if (runner.instance === INSTANCE) return false;
    if (runner.pid === process.pid || !isAlive(runner.pid)) return false;
    // No request outlives its timeout: past it (and a margin), the runner is not coming back.
    return Date.now() - Date.parse(runner.startedAt) < this.timeoutMs() + 30_000;
  }

  /**
   * Starts the request for one run. The run number is claimed with an exclusive file, so
   * two workers that both find a lost request do not both send it again.
   */
  private async start(record: JobRecord): Promise<void> {
    const dir = this.jobDir(record.id);
    const run = record.runs + 1;
    try {
      const claim = await open(path.join(dir, `run-${run}.claim`), 'wx');
      await claim.close();
    } catch {
      return; // someone else started this run
    }
    const next: JobRecord = {
      ...record,
      runs: run,
      runner: { pid: process.pid, instance: INSTANCE, startedAt: new Date().toISOString(), run },
    };
    await this.writeJson(dir, 'job.json', next);
    const controller = new AbortController();
    this.inFlight.set(record.id, controller);
    void this.transcribe(next, controller).finally(() => {
      if (this.inFlight.get(record.id) === controller) this.inFlight.delete(record.id);
    });
  }

  private async transcribe(record: JobRecord, controller: AbortController): Promise<void> {
    const dir = this.jobDir(record.id);
    try {
      const form = new FormData();
      const file = await openAsBlob(path.join(dir, record.fileName), { type: record.mediaType });
      form.append('file', file, record.fileName);
      form.append('model', record.model);
      form.append('response_format', 'verbose_json');
      form.append('timestamp_granularities[]', 'segment');
      if (record.language) form.append('language', record.language);
      const headers: Record<string, string> = {};
      if (this.options.apiKey) headers.authorization = `Bearer ${this.options.apiKey}`;
      const { json } = await providerJson({
        provider: this.name,
        url: joinUrl(this.options.baseUrl, '/v1/audio/transcriptions'),
        method: 'POST',
        headers,
        body: form,
        signal: controller.signal,
        timeoutMs: this.timeoutMs(),
        fetchImpl: this.options.fetchImpl,
        secrets: this.options.apiKey ? [this.options.apiKey] : [],
      });
      const result = parseVerboseJson(this.name, json);
      await this.writeJson(dir, 'result.json', result);
    } catch (error) {
      if (controller.signal.aborted) return; // deleted while in flight
      const stored: StoredError =
        error instanceof ProviderError
          ? { category: error.category, message: error.message, retryAfterMs: error.retryAfterMs }
          : { category: 'internal', message: `${this.name}: ${redactError(error)}` };
      await this.writeJson(dir, 'error.json', stored).catch(() => {});
    }
  }

  private jobDir(id: string): string {
    return path.join(this.workDir, id);
  }

  private existingJobDir(engineJobId: string): string {
    if (!JOB_ID.test(engineJobId))
      throw new ProviderError('invalid', `${this.name}: malformed engine job id`);
    return this.jobDir(engineJobId);
  }

  private async readRecord(engineJobId: string, dir: string): Promise<JobRecord> {
    const record = await this.readJsonFile<JobRecord>(dir, 'job.json');
    if (!record)
      throw new ProviderError(
        'invalid',
        `${this.name}: engine job ${engineJobId} is unknown or lost`,
      );
    return record;
  }

  private async readJsonFile<T>(dir: string, name: string): Promise<T | undefined> {
    try {
      return JSON.parse(await readFile(path.join(dir, name), 'utf8')) as T;
    } catch {
      return undefined;
    }
  }

  /** Written whole or not at all: a reader never sees half a file. */
  private async writeJson(dir: string, name: string, value: unknown): Promise<void> {
    const temporary = path.join(dir, `${name}.${process.pid}.${randomUUID()}.tmp`);
    await writeFile(temporary, JSON.stringify(value), { mode: 0o600 });
    await rename(temporary, path.join(dir, name));
  }
}
