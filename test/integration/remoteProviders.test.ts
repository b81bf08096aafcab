import { mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { parseConfig } from '../../core/config';
import { type FailureClass, ProviderError } from '../../core/failures';
import type {
  AudioEngine,
  AudioPoll,
  CallContext,
  ImageEngine,
  MediaInput,
} from '../../core/provider';
import { AsyncSpeechProvider } from '../../providers/asyncSpeech';
import { createRemoteEngines } from '../../providers/catalogue';
import { providerJson, providerRequest } from '../../providers/http';
import { OpenAiAudioProvider } from '../../providers/openaiAudio';
import { OpenAiChatProvider } from '../../providers/openaiChat';
import { createProviderRegistry } from '../../providers/registry';
import {
  answers,
  CHAT,
  closedPortUrl,
  type FakeProviderServer,
  JOBS_LIST,
  JOBS_POLL,
  JOBS_SUBMIT,
  type Scripted,
  startFakeProviderServer,
  TRANSCRIBE,
} from '../support/fakeProviderServer';
import { waitUntil } from '../support/wait';

/** The remote engines a worker registers under these settings. */
const remoteProvidersFromEnv = (settings: Record<string, string | undefined>) =>
  createRemoteEngines(parseConfig(settings));

const API_KEY = 'sk-test-0123456789abcdefghijklmn';
// A 1x1 PNG.
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==',
  'base64',
);

let fake: FakeProviderServer;
let dir: string;
let image: MediaInput;
let audio: MediaInput;

function ctx(overrides: Partial<CallContext> = {}): CallContext {
  return {
    signal: new AbortController().signal,
    language: 'en',
    options: {},
    callKey: 'k',
    ...overrides,
  };
}

async function failure(work: Promise<unknown>): Promise<ProviderError> {
  try {
    await work;
  } catch (error) {
    if (error instanceof ProviderError) return error;
    throw error;
  }
  throw new Error('expected a ProviderError, the call succeeded');
}

function chat(options: Partial<ConstructorParameters<typeof OpenAiChatProvider>[0]> = {}) {
  return new OpenAiChatProvider({
    baseUrl: fake.url,
    apiKey: API_KEY,
    model: 'vision-1',
    timeoutMs: 2_000,
    ...options,
  });
}

const line = { box: { x: 10, y: 20, w: 300, h: 40 } };

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'quire-remote-test-'));
  await writeFile(path.join(dir, 'page.png'), PNG);
  // Not real audio: the fake server does not decode it, and the adapters must not either.
  await writeFile(path.join(dir, 'talk.wav'), Buffer.from('RIFF....WAVEfmt fake audio bytes'));
  image = { path: path.join(dir, 'page.png'), mediaType: 'image/png' };
  audio = { path: path.join(dir, 'talk.wav'), mediaType: 'audio/wav' };
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

beforeEach(async () => {
  fake = await startFakeProviderServer();
});

afterEach(async () => {
  await fake.close();
});

describe('Q2 OpenAI-compatible chat/vision provider', () => {
  it('Q2 recognizeLine sends the page as a data URL with the box described and returns one line', async () => {
    fake.chatReply = () => 'In the beginning\nwas the word';
    const result = await chat().recognizeLine(image, line, ctx());
    expect(result.text).toBe('In the beginning was the word');
    expect(result.cost).toEqual({ units: 110, unit: 'token' });
    const request = fake.requests[0]!;
    expect(request.path).toBe('/v1/chat/completions');
    expect(request.headers.authorization).toBe(`Bearer ${API_KEY}`);
    const body = JSON.parse(request.body.toString('utf8'));
    expect(body.model).toBe('vision-1');
    const parts = body.messages[1].content;
    expect(parts[0].text).toContain('x=10, y=20, width=300, height=40');
    expect(parts[1].image_url.url).toBe(`data:image/png;base64,${PNG.toString('base64')}`);
  });

  it('Q2 recognizeLine sends a cropped line when a crop function is configured; the job model wins', async () => {
    const provider = chat({
      cropLine: async () => ({ data: Buffer.from('cropped'), mediaType: 'image/jpeg' }),
    });
    await provider.recognizeLine(image, line, ctx({ model: 'vision-2' }));
    const body = JSON.parse(fake.requests[0]!.body.toString('utf8'));
    expect(body.model).toBe('vision-2');
    expect(body.messages[1].content[1].image_url.url).toBe(
      `data:image/jpeg;base64,${Buffer.from('cropped').toString('base64')}`,
    );
  });

  it('Q2 polish keeps the number of lines; a different count is internal', async () => {
    fake.chatReply = () => '```\nThe first line.\nThe second line.\n```';
    const polished = await chat().polish('teh first line\nthe secnd line\n', 'image', ctx());
    expect(polished.text).toBe('The first line.\nThe second line.\n');
    fake.chatReply = () => 'just one line';
    const e = await failure(chat().polish('a\nb', 'image', ctx()));
    expect(e.category).toBe('internal');
  });

  it('Q2 segmentPage delegates to the fallback segmenter, and without one is invalid', async () => {
    const segmenter = {
      segmentPage: async () => ({ lines: [line], cost: { units: 1, unit: 'page' as const } }),
    } as unknown as ImageEngine;
    expect((await chat({ fallbackSegmenter: segmenter }).segmentPage(image, ctx())).lines).toEqual([
      line,
    ]);
    expect((await failure(chat().segmentPage(image, ctx()))).category).toBe('invalid');
    expect(fake.requests).toHaveLength(0);
  });

  it('Q1 the chat provider does not transcribe audio (invalid)', async () => {
    // The registry refuses the audio engine of a provider that reads images only.
    const provider = () => createProviderRegistry([chat()]).audioEngine('openai-chat');
    for (const call of [
      (): Promise<unknown> => provider().submitAudio(audio, ctx()),
      () => provider().pollAudio('x', ctx()),
      () => provider().deleteAudio('x', ctx()),
    ]) {
      const e = await failure(Promise.resolve().then(call));
      expect(e.category).toBe('invalid');
      expect(e.message).toBe('this provider does not transcribe audio');
    }
  });

  it('Q3 an image type the API does not take is image, before any call', async () => {
    const e = await failure(
      chat().recognizeLine({ path: image.path, mediaType: 'image/tiff' }, line, ctx()),
    );
    expect(e.category).toBe('image');
    expect(fake.requests).toHaveLength(0);
  });
});

const cases: Array<{
  name: string;
  answer: () => Scripted;
  category: FailureClass;
  retryAfterMs?: number;
}> = [
  { name: 'Q3 a 401 is auth', answer: answers.unauthorized, category: 'auth' },
  { name: 'Q3 a 403 is auth', answer: answers.forbidden, category: 'auth' },
  { name: 'Q3 a 402 is credit', answer: answers.paymentRequired, category: 'credit' },
  {
    name: 'Q3 a 429 saying insufficient quota is credit',
    answer: answers.insufficientQuota,
    category: 'credit',
  },
  {
    name: 'Q3 a 429 with Retry-After pauses as outage with the given delay',
    answer: () => answers.rateLimited('42'),
    category: 'outage',
    retryAfterMs: 42_000,
  },
  {
    name: 'Q3 a 429 without Retry-After is outage with no delay given',
    answer: () => answers.rateLimited(),
    category: 'outage',
  },
  {
    name: 'Q3 a 500 is internal (charged)',
    answer: () => answers.serverError(500),
    category: 'internal',
  },
  { name: 'Q3 a 503 is outage', answer: () => answers.serverError(503), category: 'outage' },
  {
    name: 'Q3 a 502 is outage',
    answer: () => answers.serverError(502, '<html>bad gateway</html>'),
    category: 'outage',
  },
  { name: 'Q3 a reset connection is outage', answer: answers.reset, category: 'outage' },
  { name: 'Q3 malformed JSON is internal', answer: answers.malformed, category: 'internal' },
  {
    name: 'Q3 a 200 of the wrong shape is internal',
    answer: () => ({ status: 200, body: { choices: [] } }),
    category: 'internal',
  },
  { name: 'Q3 a refusal field is content', answer: answers.chatRefusal, category: 'content' },
  {
    name: 'Q3 finish_reason content_filter is content',
    answer: answers.contentFilter,
    category: 'content',
  },
  {
    name: 'Q3 a 400 content policy violation is content',
    answer: answers.contentPolicy400,
    category: 'content',
  },
  { name: 'Q3 a 400 is invalid', answer: () => answers.badRequest(400), category: 'invalid' },
  { name: 'Q3 a 413 is invalid', answer: () => answers.badRequest(413), category: 'invalid' },
  { name: 'Q3 a 415 is invalid', answer: () => answers.badRequest(415), category: 'invalid' },
  { name: 'Q3 a 422 is invalid', answer: () => answers.badRequest(422), category: 'invalid' },
];

describe('Q3 every failure class from the fake server (chat provider)', () => {
  for (const c of cases) {
    it(c.name, async () => {
      fake.script(CHAT, c.answer());
      const e = await failure(chat().recognizeLine(image, line, ctx()));
      expect(e.category).toBe(c.category);
      expect(e.retryAfterMs).toBe(c.retryAfterMs);
      // Quire does the retrying: exactly one request per call.
      expect(fake.requests).toHaveLength(1);
    });
  }

  it('Q3 a 429 with an HTTP-date Retry-After gives the delay until that date', async () => {
    const at = new Date(Date.now() + 90_000);
    at.setMilliseconds(0);
    fake.script(CHAT, answers.rateLimited(at.toUTCString()));
    const e = await failure(chat().recognizeLine(image, line, ctx()));
    expect(e.category).toBe('outage');
    expect(e.retryAfterMs).toBeGreaterThan(80_000);
    expect(e.retryAfterMs).toBeLessThanOrEqual(90_000);
  });

  it('Q2 Q3 a hanging provider times out after the per-call timeout', async () => {
    fake.script(CHAT, answers.hang());
    const started = Date.now();
    const e = await failure(chat({ timeoutMs: 300 }).recognizeLine(image, line, ctx()));
    expect(e.category).toBe('timeout');
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it('Q2 a body that stalls after the headers also times out (the timeout covers the whole body)', async () => {
    fake.script(CHAT, { stallBody: '{"choices": [', status: 200 });
    const e = await failure(chat({ timeoutMs: 300 }).recognizeLine(image, line, ctx()));
    expect(e.category).toBe('timeout');
  });

  it('Q3 a refused connection is outage', async () => {
    const e = await failure(
      chat({ baseUrl: await closedPortUrl() }).recognizeLine(image, line, ctx()),
    );
    expect(e.category).toBe('outage');
  });

  it('Q2 the caller aborting a call rethrows its reason, not a failure class', async () => {
    fake.script(CHAT, answers.hang());
    const controller = new AbortController();
    const reason = new Error('activity cancelled');
    setTimeout(() => controller.abort(reason), 100);
    await expect(
      chat({ timeoutMs: 10_000 }).recognizeLine(image, line, ctx({ signal: controller.signal })),
    ).rejects.toBe(reason);
  });

  it('Q2 a slow answer within the timeout is fine', async () => {
    fake.script(CHAT, { delayMs: 150, answer: answers.contentFilter() });
    const e = await failure(chat({ timeoutMs: 2_000 }).recognizeLine(image, line, ctx()));
    expect(e.category).toBe('content');
  });

  it('Q2 redirects are not followed (the key must not travel elsewhere)', async () => {
    fake.script(CHAT, { status: 307, headers: { location: `${fake.url}/elsewhere` }, body: '' });
    const e = await failure(chat().recognizeLine(image, line, ctx()));
    expect(e.category).toBe('internal');
    expect(fake.requests).toHaveLength(1);
  });
});

describe('Q4 secrets planted in provider error bodies never reach the ProviderError message', () => {
  const secrets = [
    'sk-live-9f8e7d6c5b4a39281706f5e4d3c2b1a0',
    'Bearer abcdefghij0123456789klmnopqrst',
    'token=tok_5up3r53cr3tv4lu3',
    'https://admin:pa55w0rdXYZ@internal.example.com/path',
    API_KEY,
  ];
  const fragments = [
    '9f8e7d6c5b4a3928',
    'abcdefghij0123456789',
    'tok_5up3r53cr3tv4lu3',
    'pa55w0rdXYZ',
    API_KEY,
  ];

  for (const status of [400, 401, 402, 403, 422, 429, 500, 503]) {
    it(`Q4 HTTP ${status} with secrets in JSON and in plain text`, async () => {
      const planted = secrets.join(' and ');
      fake.script(
        CHAT,
        { status, body: { error: { message: `bad key ${planted}`, code: 'x' } } },
        {
          status,
          headers: { 'content-type': 'text/plain' },
          body: `Upstream said: ${planted}\n${planted}`,
        },
      );
      for (let i = 0; i < 2; i++) {
        const e = await failure(chat().recognizeLine(image, line, ctx()));
        for (const fragment of fragments) expect(e.message).not.toContain(fragment);
        expect(e.message.length).toBeLessThan(300);
      }
    });
  }

  it('Q4 the whisper and async-speech adapters redact too', async () => {
    const planted = `key ${secrets[0]} ${secrets[1]}`;
    fake.script(TRANSCRIBE, { status: 401, body: { error: { message: planted } } });
    fake.script(JOBS_SUBMIT, { status: 500, body: planted });
    const whisper = new OpenAiAudioProvider({
      baseUrl: fake.url,
      workDir: path.join(dir, 'w-redact'),
    });
    const { engineJobId } = await whisper.submitAudio(audio, ctx());
    const e1 = await failure(pollUntilDone(whisper, engineJobId));
    const e2 = await failure(
      new AsyncSpeechProvider({ baseUrl: fake.url }).submitAudio(audio, ctx()),
    );
    for (const e of [e1, e2]) {
      for (const fragment of fragments.slice(0, 2)) expect(e.message).not.toContain(fragment);
    }
    expect(e1.category).toBe('auth');
    expect(e2.category).toBe('internal');
  });
});

async function pollUntilDone(
  provider: AudioEngine,
  id: string,
  max = 200,
): Promise<AudioPoll & { state: 'done' }> {
  for (let i = 0; i < max; i++) {
    const poll = await provider.pollAudio(id, ctx());
    if (poll.state === 'done') return poll;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error('engine job never finished');
}

describe('Q2 OpenAI-compatible audio transcription (Whisper servers)', () => {
  let workDir: string;
  beforeEach(async () => {
    workDir = await mkdtemp(path.join(dir, 'whisper-'));
  });
  const whisper = (options: Partial<ConstructorParameters<typeof OpenAiAudioProvider>[0]> = {}) =>
    new OpenAiAudioProvider({
      baseUrl: fake.url,
      apiKey: API_KEY,
      model: 'whisper-large-v3',
      workDir,
      timeoutMs: 2_000,
      ...options,
    });

  it('Q2 T2 submit copies the recording privately, poll returns #t segments, delete removes the copy', async () => {
    const copy = path.join(dir, 'talk-copy.wav');
    await writeFile(copy, Buffer.from('RIFF....WAVEfmt fake audio'));
    const provider = whisper();
    const { engineJobId, cost } = await provider.submitAudio(
      { path: copy, mediaType: 'audio/wav' },
      ctx({ language: 'en-GB' }),
    );
    expect(cost.units).toBe(0);
    // Our blob may go as soon as the id is saved.
    await rm(copy);
    const jobDir = path.join(workDir, engineJobId);
    expect((await stat(jobDir)).mode & 0o777).toBe(0o700);
    const done = await pollUntilDone(provider, engineJobId);
    expect(done.segments).toEqual([
      {
        index: 0,
        target: { kind: 't', start: 0, end: 2.1 },
        text: 'Hello there.',
        confidence: Math.exp(-0.1),
      },
      {
        index: 1,
        target: { kind: 't', start: 2.1, end: 4.2 },
        text: 'General Kenobi.',
        confidence: Math.exp(-0.3),
      },
    ]);
    expect(done.cost).toEqual({ units: 4.2, unit: 'audio_second' });
    const request = fake.requests[0]!;
    expect(request.path).toBe('/v1/audio/transcriptions');
    expect(request.headers.authorization).toBe(`Bearer ${API_KEY}`);
    expect(request.headers['content-type']).toMatch(/^multipart\/form-data/);
    const form = request.body.toString('latin1');
    const fields: Array<[string, string]> = [
      ['model', 'whisper-large-v3'],
      ['response_format', 'verbose_json'],
      ['timestamp_granularities[]', 'segment'],
      ['language', 'en'],
    ];
    for (const [field, value] of fields) {
      expect(form).toMatch(
        new RegExp(`name="${field.replace(/[[\]]/g, '\\$&')}"\\r\\n\\r\\n${value}\\r\\n`),
      );
    }
    expect(form).toContain('fake audio');
    await provider.deleteAudio(engineJobId, ctx());
    await expect(stat(jobDir)).rejects.toThrow();
    await provider.deleteAudio(engineJobId, ctx()); // idempotent
    expect((await failure(provider.pollAudio(engineJobId, ctx()))).category).toBe('invalid');
  });

  it('Q3 a failed request is reported once with its class; the next poll sends it again from the copy', async () => {
    fake.script(TRANSCRIBE, answers.rateLimited('5'));
    const provider = whisper();
    const { engineJobId } = await provider.submitAudio(audio, ctx());
    const e = await failure(pollUntilDone(provider, engineJobId));
    expect(e.category).toBe('outage');
    expect(e.retryAfterMs).toBe(5_000);
    const done = await pollUntilDone(provider, engineJobId);
    expect(done.segments).toHaveLength(2);
    expect(fake.requests.filter((r) => r.path === '/v1/audio/transcriptions')).toHaveLength(2);
  });

  for (const c of [
    { answer: answers.unauthorized, category: 'auth' },
    { answer: answers.paymentRequired, category: 'credit' },
    { answer: () => answers.serverError(503), category: 'outage' },
    { answer: answers.malformed, category: 'internal' },
    {
      answer: () => ({ status: 200, body: { segments: [{ start: 'zero' }] } }),
      category: 'internal',
    },
    { answer: () => answers.badRequest(415), category: 'invalid' },
  ] as const) {
    it(`Q3 whisper maps a scripted failure to ${c.category}`, async () => {
      fake.script(TRANSCRIBE, c.answer());
      const provider = whisper();
      const { engineJobId } = await provider.submitAudio(audio, ctx());
      expect((await failure(pollUntilDone(provider, engineJobId))).category).toBe(c.category);
    });
  }

  it('Q2 Q3 a hanging transcription server times out as timeout', async () => {
    fake.script(TRANSCRIBE, answers.hang());
    const provider = whisper({ timeoutMs: 300 });
    const { engineJobId } = await provider.submitAudio(audio, ctx());
    expect((await provider.pollAudio(engineJobId, ctx())).state).toBe('running');
    expect((await failure(pollUntilDone(provider, engineJobId))).category).toBe('timeout');
  });

  it('Q2 a restarted worker answers from disk: a finished result without a new request', async () => {
    const first = whisper();
    const { engineJobId } = await first.submitAudio(audio, ctx());
    await pollUntilDone(first, engineJobId);
    const restarted = whisper();
    const done = await restarted.pollAudio(engineJobId, ctx());
    expect(done.state).toBe('done');
    expect(fake.requests).toHaveLength(1);
  });

  it('Q2 a restarted worker sends a request lost with its predecessor again, and answers done', async () => {
    // The first worker's request never comes back (it died with its process).
    const never: typeof fetch = () => new Promise<Response>(() => {});
    const first = whisper({ fetchImpl: never, timeoutMs: 60_000 });
    const { engineJobId } = await first.submitAudio(audio, ctx());
    expect((await first.pollAudio(engineJobId, ctx())).state).toBe('running');
    const restarted = whisper();
    const done = await pollUntilDone(restarted, engineJobId);
    expect(done.segments).toHaveLength(2);
    expect(fake.requests).toHaveLength(1);
  });

  it('Q2 an engine job whose directory is gone is reported lost (invalid); a malformed id too', async () => {
    const provider = whisper();
    const { engineJobId } = await provider.submitAudio(audio, ctx());
    await pollUntilDone(provider, engineJobId);
    await rm(path.join(workDir, engineJobId), { recursive: true });
    expect((await failure(provider.pollAudio(engineJobId, ctx()))).category).toBe('invalid');
    expect((await failure(provider.pollAudio('../../etc', ctx()))).category).toBe('invalid');
  });

  it('Q2 deleting an engine job in flight aborts its request and leaves nothing behind', async () => {
    fake.script(TRANSCRIBE, answers.hang());
    const provider = whisper({ timeoutMs: 10_000 });
    const before = fake.requests.length;
    const { engineJobId } = await provider.submitAudio(audio, ctx());
    await waitUntil(() => fake.requests.length > before);
    const [request] = fake.requests.slice(before);
    await provider.deleteAudio(engineJobId, ctx());
    // The request has ended on the wire, so nothing of it is left to write a result.
    await waitUntil(() => request!.abandoned === true);
    expect(await readdir(workDir)).toEqual([]);
  });

  it('O3 listEngineJobs lists the jobs on disk with their age', async () => {
    const provider = whisper();
    const { engineJobId } = await provider.submitAudio(audio, ctx());
    const listed = await provider.listEngineJobs();
    expect(listed.map((j) => j.engineJobId)).toEqual([engineJobId]);
    expect(Math.abs(listed[0]!.createdAt.getTime() - Date.now())).toBeLessThan(10_000);
  });

  it('Q2 a server that ignores verbose_json still yields one segment over the recording', async () => {
    fake.transcriptionReply = () => ({ text: ' all of it ', duration: 7 });
    const provider = whisper();
    const { engineJobId } = await provider.submitAudio(audio, ctx());
    const done = await pollUntilDone(provider, engineJobId);
    expect(done.segments).toEqual([
      { index: 0, target: { kind: 't', start: 0, end: 7 }, text: 'all of it' },
    ]);
  });
});

describe('Q2 generic asynchronous speech-job API', () => {
  const speech = (options: Partial<ConstructorParameters<typeof AsyncSpeechProvider>[0]> = {}) =>
    new AsyncSpeechProvider({ baseUrl: fake.url, apiKey: API_KEY, timeoutMs: 2_000, ...options });

  it('Q2 submit, poll until done, delete (a second delete is a 404 and still fine), list', async () => {
    fake.pollsUntilDone = 2;
    const provider = speech({ model: 'big' });
    const { engineJobId } = await provider.submitAudio(audio, ctx());
    expect(fake.speechJobs.has(engineJobId)).toBe(true);
    const submit = fake.requests[0]!;
    expect(submit.headers.authorization).toBe(`Bearer ${API_KEY}`);
    expect(submit.body.toString('latin1')).toMatch(/name="model"\r\n\r\nbig\r\n/);
    expect((await provider.listEngineJobs()).map((j) => j.engineJobId)).toEqual([engineJobId]);
    expect(await provider.pollAudio(engineJobId, ctx())).toEqual({
      state: 'running',
      progress: 0.5,
    });
    const done = await pollUntilDone(provider, engineJobId);
    expect(done.segments).toEqual([
      { index: 0, target: { kind: 't', start: 0, end: 1.5 }, text: 'first words', speaker: 'A' },
      { index: 1, target: { kind: 't', start: 1.5, end: 3 }, text: 'second words', speaker: 'B' },
    ]);
    expect(done.cost).toEqual({ units: 3, unit: 'audio_second' });
    await provider.deleteAudio(engineJobId, ctx());
    expect(fake.speechJobs.get(engineJobId)!.deleted).toBe(true);
    await provider.deleteAudio(engineJobId, ctx());
    expect(await provider.listEngineJobs()).toEqual([]);
  });

  it('Q2 an unknown engine job is lost (invalid)', async () => {
    const e = await failure(speech().pollAudio('no-such-job', ctx()));
    expect(e.category).toBe('invalid');
  });

  it('Q3 a failed engine job maps its error code: unsupported media -> image, others -> internal', async () => {
    const provider = speech();
    fake.script(JOBS_POLL, {
      status: 200,
      body: { id: 'j', status: 'failed', error: { code: 'unsupported_media' } },
    });
    expect((await failure(provider.pollAudio('j', ctx()))).category).toBe('image');
    fake.script(JOBS_POLL, {
      status: 200,
      body: { id: 'j', status: 'failed', error: { code: 'gpu_fell_over' } },
    });
    expect((await failure(provider.pollAudio('j', ctx()))).category).toBe('internal');
    fake.script(JOBS_POLL, { status: 200, body: { id: 'j', status: 'mystery' } });
    expect((await failure(provider.pollAudio('j', ctx()))).category).toBe('internal');
    fake.script(JOBS_POLL, { status: 200, body: { id: 'j', status: 'done' } });
    expect((await failure(provider.pollAudio('j', ctx()))).category).toBe('internal');
  });

  it('Q3 submit and poll failures are classified like every other adapter', async () => {
    const provider = speech();
    fake.script(JOBS_SUBMIT, answers.unauthorized(), answers.insufficientQuota(), {
      status: 201,
      body: { nope: 1 },
    });
    expect((await failure(provider.submitAudio(audio, ctx()))).category).toBe('auth');
    expect((await failure(provider.submitAudio(audio, ctx()))).category).toBe('credit');
    expect((await failure(provider.submitAudio(audio, ctx()))).category).toBe('internal');
    fake.script(JOBS_POLL, answers.rateLimited('3'), answers.serverError(504), answers.hang());
    const e = await failure(provider.pollAudio('j', ctx()));
    expect([e.category, e.retryAfterMs]).toEqual(['outage', 3_000]);
    expect((await failure(provider.pollAudio('j', ctx()))).category).toBe('outage');
    expect((await failure(speech({ timeoutMs: 200 }).pollAudio('j', ctx()))).category).toBe(
      'timeout',
    );
  });

  it('O3 list follows next_cursor pages', async () => {
    fake.script(
      JOBS_LIST,
      {
        status: 200,
        body: { jobs: [{ id: 'a', created_at: '2030-01-01T00:00:00Z' }], next_cursor: 'c2' },
      },
      {
        status: 200,
        body: { jobs: [{ id: 'b', createdAt: '2030-01-02T00:00:00Z' }, { id: 'bad' }] },
      },
    );
    const listed = await speech().listEngineJobs();
    expect(listed.map((j) => j.engineJobId)).toEqual(['a', 'b']);
    expect(fake.requests.map((r) => r.path)).toEqual(['/jobs', '/jobs']);
  });

  it('Q1 the speech adapters do not read images (invalid)', async () => {
    // The registry refuses the image engine of a provider that reads audio only.
    const registry = createProviderRegistry([
      speech(),
      new OpenAiAudioProvider({ baseUrl: fake.url, workDir: dir }),
    ]);
    for (const name of registry.names()) {
      const provider = () => registry.imageEngine(name);
      const recognize = () => provider().recognizeLine(image, line, ctx());
      const segment = () => provider().segmentPage(image, ctx());
      expect((await failure(Promise.resolve().then(recognize))).category).toBe('invalid');
      expect((await failure(Promise.resolve().then(segment))).category).toBe('invalid');
    }
  });
});

describe('Q2 remote providers from configuration', () => {
  it('Q2 builds the configured providers by name, and none when nothing is set', () => {
    expect(remoteProvidersFromEnv({})).toEqual([]);
    const providers = remoteProvidersFromEnv({
      QUIRE_OPENAI_BASE_URL: 'http://127.0.0.1:9/',
      QUIRE_OPENAI_API_KEY: API_KEY,
      QUIRE_WHISPER_BASE_URL: 'http://127.0.0.1:9',
      QUIRE_ASYNC_SPEECH_BASE_URL: 'https://speech.example.com/api',
    });
    expect(providers.map((p) => p.name)).toEqual(['openai-chat', 'whisper', 'async-speech']);
    expect(providers[0]!.identity().model).toBe('gpt-4o-mini');
    expect(providers[1]!.identity().model).toBe('whisper-1');
  });

  it('Q2 invalid values fail at start, naming the variable and never its value', () => {
    const bad = [
      { QUIRE_OPENAI_BASE_URL: 'not a url sk-live-abcdefghijklmnop' },
      { QUIRE_WHISPER_BASE_URL: 'ftp://x' },
      { QUIRE_ASYNC_SPEECH_BASE_URL: 'https://user:sekrit@host' },
      { QUIRE_PROVIDER_TIMEOUT_MS: 'soon' },
      { QUIRE_PROVIDER_TIMEOUT_MS: '0' },
    ];
    for (const env of bad) {
      let message = '';
      try {
        remoteProvidersFromEnv(env);
      } catch (error) {
        message = (error as Error).message;
      }
      expect(message).toContain(Object.keys(env)[0]!);
      expect(message).not.toContain('sekrit');
      expect(message).not.toContain('abcdefghijklmnop');
    }
  });

  it('Q2 QUIRE_PROVIDER_TIMEOUT_MS sets the per-call timeout of the built providers', async () => {
    fake.script(CHAT, answers.hang());
    const provider = createProviderRegistry(
      remoteProvidersFromEnv({
        QUIRE_OPENAI_BASE_URL: fake.url,
        QUIRE_OPENAI_MODEL: 'm',
        QUIRE_PROVIDER_TIMEOUT_MS: '250',
      }),
    ).imageEngine('openai-chat');
    const started = Date.now();
    expect((await failure(provider.recognizeLine(image, line, ctx()))).category).toBe('timeout');
    expect(Date.now() - started).toBeLessThan(3_000);
  });
});

describe('Q2 providerRequest directly', () => {
  it('Q2 an accepted status is an answer, not a failure', async () => {
    const response = await providerRequest({
      provider: 'p',
      url: `${fake.url}/jobs/missing`,
      signal: new AbortController().signal,
      accept: [404],
    });
    expect(response.status).toBe(404);
  });

  it('Q2 an answer larger than allowed is internal', async () => {
    fake.script(CHAT, { status: 200, body: { pad: 'x'.repeat(5_000) } });
    const e = await failure(
      providerJson({
        provider: 'p',
        url: `${fake.url}/v1/chat/completions`,
        method: 'POST',
        body: '{}',
        signal: new AbortController().signal,
        maxResponseBytes: 1_000,
      }),
    );
    expect(e.category).toBe('internal');
  });
});
