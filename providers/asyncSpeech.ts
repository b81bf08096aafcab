/**
 * A generic asynchronous speech-job API (Q2), the shape most hosted speech services share.
 * Quire expects, relative to the configured base URL (Bearer key when one is configured):
 *
 * - `POST /jobs`, multipart: `file` (the recording), `model` (optional), `language` (optional,
 *   ISO 639-1) -> 200/201/202 `{"id": "<engine job id>"}`.
 * - `GET /jobs/{id}` -> 200
 *   `{"id": "...", "status": "queued" | "running" | "done" | "failed",
 *     "progress"?: 0..1, "duration"?: seconds,
 *     "segments"?: [{"start": s, "end": s, "text": "...", "speaker"?: "...", "confidence"?: 0..1}],
 *     "error"?: {"code"?: "...", "message"?: "..."}}`;
 *   `segments` is required when `status` is `done`. 404: the job is unknown (lost): `invalid`.
 * - `DELETE /jobs/{id}` -> 2xx; 404 counts as deleted (idempotent).
 * - `GET /jobs[?cursor=...]` -> 200 `{"jobs": [{"id": "...", "created_at": "<ISO 8601>"}],
 *   "next_cursor"?: "..."}` (`createdAt` accepted too), for the stranded-job sweep (O3).
 *
 * A `failed` job maps its `error.code`: `unsupported_media`, `invalid_audio`,
 * `unreadable_audio` -> `image`; `content_policy`, `content` -> `content`; `invalid_request`
 * -> `invalid`; anything else -> `internal`. HTTP failures are classified by
 * providers/http.ts. The upload finishes inside submitAudio, so the engine holds its own copy
 * once the id is returned.
 */

import { openAsBlob } from 'node:fs';
import type { Segment } from '../core/annotation';
import { type FailureClass, ProviderError } from '../core/failures';
import type { MediaKind } from '../core/media';
import type {
  AudioEngine,
  AudioPoll,
  CallContext,
  CallCost,
  EngineIdentity,
  MediaInput,
} from '../core/provider';
import { throwIfAborted } from './engineSupport';
import {
  DEFAULT_TIMEOUT_MS,
  joinUrl,
  providerJson,
  providerRequest,
  unexpectedShape,
} from './http';
import { whisperLanguage } from './openaiAudio';
import { polishText } from './polish';

export interface AsyncSpeechOptions {
  /** Registry name; default `async-speech`. */
  name?: string;
  baseUrl: string;
  apiKey?: string;
  /** Sent as `model` when set (or when the job names one). */
  model?: string;
  timeoutMs?: number;
  fetchImpl?: typeof fetch;
  /** Pages of `GET /jobs` followed at most; default 100. */
  maxListPages?: number;
}

const ENGINE_ID = /^[A-Za-z0-9._:-]{1,200}$/;

const FAILED_CODES: Record<string, FailureClass> = {
  unsupported_media: 'image',
  invalid_audio: 'image',
  unreadable_audio: 'image',
  content_policy: 'content',
  content: 'content',
  invalid_request: 'invalid',
};

export class AsyncSpeechProvider implements AudioEngine {
  readonly name: string;
  private readonly options: AsyncSpeechOptions;

  constructor(options: AsyncSpeechOptions) {
    this.name = options.name ?? 'async-speech';
    this.options = options;
  }

  identity(model?: string): EngineIdentity {
    return {
      engine: this.name,
      model: this.modelOf(model) ?? 'default',
      version: 'async-speech-api',
    };
  }

  async submitAudio(
    audio: MediaInput,
    ctx: CallContext,
  ): Promise<{ engineJobId: string; cost: CallCost }> {
    throwIfAborted(ctx.signal);
    let file: Blob;
    try {
      file = await openAsBlob(audio.path, { type: audio.mediaType.split(';')[0]!.trim() });
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? 'EIO';
      throw new ProviderError('internal', `${this.name}: audio file could not be read (${code})`);
    }
    const form = new FormData();
    form.append('file', file, 'recording');
    const model = this.modelOf(ctx.model);
    if (model) form.append('model', model);
    const language = whisperLanguage(ctx.language);
    if (language) form.append('language', language);
    const { json } = await providerJson(this.request('POST', '/jobs', ctx.signal, { body: form }));
    const id = (json as { id?: unknown })?.id;
    if (typeof id !== 'string' || !ENGINE_ID.test(id))
      throw unexpectedShape(this.name, 'submit answer without an id');
    return { engineJobId: id, cost: { units: 0, unit: 'audio_second' } };
  }

  async pollAudio(engineJobId: string, ctx: CallContext): Promise<AudioPoll> {
    throwIfAborted(ctx.signal);
    const path = this.jobPath(engineJobId);
    const response = await providerRequest(
      this.request('GET', path, ctx.signal, { accept: [404] }),
    );
    if (response.status === 404) {
      throw new ProviderError(
        'invalid',
        `${this.name}: engine job ${engineJobId} is unknown or lost`,
      );
    }
    let json: unknown;
    try {
      json = JSON.parse(response.text);
    } catch {
      throw unexpectedShape(this.name, 'poll answer is not JSON');
    }
    const o = (json ?? {}) as {
      status?: unknown;
      progress?: unknown;
      duration?: unknown;
      segments?: unknown;
      error?: { code?: unknown };
    };
    switch (o.status) {
      case 'queued':
      case 'running': {
        const progress =
          typeof o.progress === 'number' && o.progress >= 0 && o.progress <= 1
            ? o.progress
            : undefined;
        return progress === undefined ? { state: 'running' } : { state: 'running', progress };
      }
      case 'done': {
        const segments = this.parseSegments(o.segments);
        const last = segments[segments.length - 1];
        const duration =
          typeof o.duration === 'number' && Number.isFinite(o.duration)
            ? o.duration
            : last?.target.kind === 't'
              ? last.target.end
              : 0;
        return { state: 'done', segments, cost: { units: duration, unit: 'audio_second' } };
      }
      case 'failed': {
        const code = typeof o.error?.code === 'string' ? o.error.code : '';
        const category = FAILED_CODES[code] ?? 'internal';
        const shown = /^[a-z0-9_.-]{1,60}$/i.test(code) ? ` (${code})` : '';
        throw new ProviderError(category, `${this.name}: engine job failed${shown}`);
      }
      default:
        throw unexpectedShape(this.name, 'poll answer without a known status');
    }
  }

  async deleteAudio(engineJobId: string, ctx: CallContext): Promise<void> {
    throwIfAborted(ctx.signal);
    await providerRequest(
      this.request('DELETE', this.jobPath(engineJobId), ctx.signal, { accept: [404] }),
    );
  }

  async polish(
    text: string,
    kind: MediaKind,
    ctx: CallContext,
  ): Promise<{ text: string; cost: CallCost }> {
    throwIfAborted(ctx.signal);
    return { text: polishText(text, kind), cost: { units: 1, unit: 'call' } };
  }

  /** The engine's jobs with their age, for the stranded-job sweep (O3). */
  async listEngineJobs(ctx?: {
    signal?: AbortSignal;
  }): Promise<{ engineJobId: string; createdAt: Date }[]> {
    const signal = ctx?.signal ?? new AbortController().signal;
    const jobs: { engineJobId: string; createdAt: Date }[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < (this.options.maxListPages ?? 100); page++) {
      const path = cursor ? `/jobs?cursor=${encodeURIComponent(cursor)}` : '/jobs';
      const { json } = await providerJson(this.request('GET', path, signal));
      const o = json as { jobs?: unknown; next_cursor?: unknown };
      if (!Array.isArray(o?.jobs)) throw unexpectedShape(this.name, 'list answer without jobs');
      for (const raw of o.jobs) {
        const j = raw as { id?: unknown; created_at?: unknown; createdAt?: unknown };
        const created = typeof j?.created_at === 'string' ? j.created_at : j?.createdAt;
        if (typeof j?.id !== 'string' || !ENGINE_ID.test(j.id) || typeof created !== 'string')
          continue;
        const createdAt = new Date(created);
        if (Number.isNaN(createdAt.getTime())) continue;
        jobs.push({ engineJobId: j.id, createdAt });
      }
      if (typeof o.next_cursor !== 'string' || o.next_cursor === '') break;
      cursor = o.next_cursor;
    }
    return jobs;
  }

  private modelOf(model?: string): string | undefined {
    return model && model !== 'default' ? model : this.options.model;
  }

  private jobPath(engineJobId: string): string {
    if (!ENGINE_ID.test(engineJobId))
      throw new ProviderError('invalid', `${this.name}: malformed engine job id`);
    return `/jobs/${encodeURIComponent(engineJobId)}`;
  }

  private request(
    method: 'GET' | 'POST' | 'DELETE',
    path: string,
    signal: AbortSignal,
    extra: { body?: FormData; accept?: number[] } = {},
  ) {
    const headers: Record<string, string> = {};
    if (this.options.apiKey) headers.authorization = `Bearer ${this.options.apiKey}`;
    return {
      provider: this.name,
      url: joinUrl(this.options.baseUrl, path),
      method,
      headers,
      body: extra.body,
      accept: extra.accept,
      signal,
      timeoutMs: this.options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
      fetchImpl: this.options.fetchImpl,
      secrets: this.options.apiKey ? [this.options.apiKey] : [],
    };
  }

  private parseSegments(raw: unknown): Segment[] {
    if (!Array.isArray(raw)) throw unexpectedShape(this.name, 'done without segments');
    const segments: Segment[] = [];
    for (const item of raw) {
      const s = item as {
        start?: unknown;
        end?: unknown;
        text?: unknown;
        speaker?: unknown;
        confidence?: unknown;
      };
      if (typeof s?.start !== 'number' || typeof s.end !== 'number' || typeof s.text !== 'string') {
        throw unexpectedShape(this.name, 'segment without numeric start/end and text');
      }
      const text = s.text.trim();
      if (text === '') continue;
      const segment: Segment = {
        index: segments.length,
        target: { kind: 't', start: Math.max(0, s.start), end: Math.max(s.start, s.end) },
        text,
      };
      if (typeof s.speaker === 'string' && s.speaker !== '') segment.speaker = s.speaker;
      if (typeof s.confidence === 'number' && s.confidence >= 0 && s.confidence <= 1)
        segment.confidence = s.confidence;
      segments.push(segment);
    }
    return segments;
  }
}
