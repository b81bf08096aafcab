/**
 * A real HTTP server on 127.0.0.1 (random port) that speaks the three remote APIs Quire
 * adapts (OpenAI-compatible chat, OpenAI-compatible audio transcription, the generic
 * asynchronous speech-job API) and can be scripted to fail: 401, 402/credit, 429 with
 * Retry-After, 5xx, a hang, a reset connection, malformed JSON, content refusals.
 *
 * Scripted answers are queued per route (`METHOD /path`, with `:id` matching one segment)
 * and used first; when the queue is empty the route answers correctly.
 */
import { randomUUID } from 'node:crypto';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export type Scripted =
  | { status: number; headers?: Record<string, string>; body?: string | object }
  | { hang: true }
  | { reset: true }
  | { delayMs: number; answer: Scripted }
  /** Status and headers at once, then part of the body, then nothing more. */
  | { stallBody: string; status: number };

export interface RecordedRequest {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
  /** Set when the client went away before the answer was sent (an aborted request). */
  abandoned?: boolean;
}

export interface FakeSpeechJob {
  id: string;
  createdAt: Date;
  /** Polls left that answer `running` before `done`. */
  pollsUntilDone: number;
  status: 'queued' | 'running' | 'done' | 'failed';
  deleted: boolean;
}

export const CHAT = 'POST /v1/chat/completions';
export const TRANSCRIBE = 'POST /v1/audio/transcriptions';
export const JOBS_SUBMIT = 'POST /jobs';
export const JOBS_POLL = 'GET /jobs/:id';
export const JOBS_DELETE = 'DELETE /jobs/:id';
export const JOBS_LIST = 'GET /jobs';

/** Canned failures. */
export const answers = {
  unauthorized: (): Scripted => ({
    status: 401,
    body: { error: { message: 'Incorrect API key provided', type: 'invalid_request_error' } },
  }),
  forbidden: (): Scripted => ({ status: 403, body: { error: { message: 'forbidden' } } }),
  paymentRequired: (): Scripted => ({
    status: 402,
    body: { error: { message: 'payment required' } },
  }),
  insufficientQuota: (): Scripted => ({
    status: 429,
    body: {
      error: {
        message: 'You exceeded your current quota, please check your plan and billing details.',
        type: 'insufficient_quota',
        code: 'insufficient_quota',
      },
    },
  }),
  rateLimited: (retryAfter?: string): Scripted => ({
    status: 429,
    headers: retryAfter === undefined ? {} : { 'retry-after': retryAfter },
    body: { error: { message: 'Rate limit reached for requests', type: 'requests' } },
  }),
  serverError: (
    status = 500,
    body: string | object = { error: { message: 'server error' } },
  ): Scripted => ({
    status,
    body,
  }),
  badRequest: (status = 400): Scripted => ({ status, body: { error: { message: 'bad request' } } }),
  malformed: (): Scripted => ({
    status: 200,
    headers: { 'content-type': 'application/json' },
    body: '{"choices": [',
  }),
  hang: (): Scripted => ({ hang: true }),
  reset: (): Scripted => ({ reset: true }),
  chatRefusal: (): Scripted => ({
    status: 200,
    body: {
      id: 'chatcmpl-r',
      object: 'chat.completion',
      choices: [
        {
          index: 0,
          finish_reason: 'stop',
          message: {
            role: 'assistant',
            content: null,
            refusal: "I'm sorry, I can't help with that.",
          },
        },
      ],
    },
  }),
  contentFilter: (): Scripted => ({
    status: 200,
    body: {
      id: 'chatcmpl-f',
      object: 'chat.completion',
      choices: [
        { index: 0, finish_reason: 'content_filter', message: { role: 'assistant', content: '' } },
      ],
    },
  }),
  contentPolicy400: (): Scripted => ({
    status: 400,
    body: {
      error: {
        message: 'Your request was rejected as a result of our safety system.',
        code: 'content_policy_violation',
      },
    },
  }),
};

export interface FakeProviderServer {
  url: string;
  port: number;
  requests: RecordedRequest[];
  /** Queues scripted answers for a route; each is used once, in order. */
  script(route: string, ...answers: Scripted[]): void;
  /** What the chat endpoint answers when nothing is scripted: a function of the request. */
  chatReply: (request: { messages: unknown[]; model: string }) => string;
  /** What the transcription endpoint answers when nothing is scripted. */
  transcriptionReply: () => object;
  /** Async speech jobs the fake holds. */
  speechJobs: Map<string, FakeSpeechJob>;
  /** Segments a finished async speech job returns. */
  speechSegments: Array<{ start: number; end: number; text: string; speaker?: string }>;
  pollsUntilDone: number;
  close(): Promise<void>;
}

export const DEFAULT_TRANSCRIPTION = {
  task: 'transcribe',
  language: 'english',
  duration: 4.2,
  text: 'Hello there. General Kenobi.',
  segments: [
    { id: 0, start: 0, end: 2.1, text: ' Hello there.', avg_logprob: -0.1, no_speech_prob: 0.01 },
    {
      id: 1,
      start: 2.1,
      end: 4.2,
      text: ' General Kenobi.',
      avg_logprob: -0.3,
      no_speech_prob: 0.02,
    },
  ],
};

function routeOf(method: string, pathname: string): string {
  const parts = pathname.split('/');
  if (parts.length === 3 && parts[1] === 'jobs' && parts[2]) return `${method} /jobs/:id`;
  return `${method} ${pathname}`;
}

export async function startFakeProviderServer(): Promise<FakeProviderServer> {
  const queues = new Map<string, Scripted[]>();
  const sockets = new Set<Socket>();
  const requests: RecordedRequest[] = [];
  const fake: FakeProviderServer = {
    url: '',
    port: 0,
    requests,
    script(route, ...more) {
      const queue = queues.get(route) ?? [];
      queue.push(...more);
      queues.set(route, queue);
    },
    chatReply: () => 'a transcribed line',
    transcriptionReply: () => DEFAULT_TRANSCRIPTION,
    speechJobs: new Map(),
    speechSegments: [
      { start: 0, end: 1.5, text: 'first words', speaker: 'A' },
      { start: 1.5, end: 3, text: 'second words', speaker: 'B' },
    ],
    pollsUntilDone: 1,
    close: async () => {},
  };

  const send = (res: ServerResponse, answer: Scripted, socket: Socket) => {
    if ('delayMs' in answer) {
      setTimeout(() => send(res, answer.answer, socket), answer.delayMs);
      return;
    }
    if ('stallBody' in answer) {
      res.writeHead(answer.status, { 'content-type': 'application/json' });
      res.write(answer.stallBody);
      return;
    }
    if ('hang' in answer) return;
    if ('reset' in answer) {
      socket.destroy();
      return;
    }
    const body = typeof answer.body === 'string' ? answer.body : JSON.stringify(answer.body ?? {});
    res.writeHead(answer.status, { 'content-type': 'application/json', ...answer.headers });
    res.end(body);
  };

  const correct = (route: string, request: RecordedRequest, id: string | undefined): Scripted => {
    switch (route) {
      case CHAT: {
        const parsed = JSON.parse(request.body.toString('utf8')) as {
          messages: unknown[];
          model: string;
        };
        return {
          status: 200,
          body: {
            id: `chatcmpl-${randomUUID()}`,
            object: 'chat.completion',
            model: parsed.model,
            choices: [
              {
                index: 0,
                finish_reason: 'stop',
                message: { role: 'assistant', content: fake.chatReply(parsed) },
              },
            ],
            usage: { prompt_tokens: 100, completion_tokens: 10, total_tokens: 110 },
          },
        };
      }
      case TRANSCRIBE:
        return { status: 200, body: fake.transcriptionReply() };
      case JOBS_SUBMIT: {
        const job: FakeSpeechJob = {
          id: randomUUID(),
          createdAt: new Date(),
          pollsUntilDone: fake.pollsUntilDone,
          status: 'queued',
          deleted: false,
        };
        fake.speechJobs.set(job.id, job);
        return { status: 201, body: { id: job.id } };
      }
      case JOBS_POLL: {
        const job = id ? fake.speechJobs.get(id) : undefined;
        if (!job || job.deleted)
          return { status: 404, body: { error: { message: 'no such job' } } };
        if (job.status === 'failed')
          return {
            status: 200,
            body: { id: job.id, status: 'failed', error: { code: 'engine_error' } },
          };
        if (job.pollsUntilDone > 0) {
          job.pollsUntilDone -= 1;
          job.status = 'running';
          return { status: 200, body: { id: job.id, status: 'running', progress: 0.5 } };
        }
        job.status = 'done';
        return {
          status: 200,
          body: { id: job.id, status: 'done', duration: 3, segments: fake.speechSegments },
        };
      }
      case JOBS_DELETE: {
        const job = id ? fake.speechJobs.get(id) : undefined;
        if (!job || job.deleted)
          return { status: 404, body: { error: { message: 'no such job' } } };
        job.deleted = true;
        return { status: 204, body: '' };
      }
      case JOBS_LIST:
        return {
          status: 200,
          body: {
            jobs: [...fake.speechJobs.values()]
              .filter((j) => !j.deleted)
              .map((j) => ({ id: j.id, status: j.status, created_at: j.createdAt.toISOString() })),
          },
        };
      default:
        return { status: 404, body: { error: { message: 'no such route' } } };
    }
  };

  const server = http.createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://127.0.0.1');
      const recorded: RecordedRequest = {
        method: req.method ?? 'GET',
        path: url.pathname,
        headers: req.headers,
        body: Buffer.concat(chunks),
      };
      requests.push(recorded);
      res.on('close', () => {
        if (!res.writableFinished) recorded.abandoned = true;
      });
      const route = routeOf(recorded.method, url.pathname);
      const id = route.endsWith(':id') ? url.pathname.split('/')[2] : undefined;
      const scripted = queues.get(route)?.shift();
      try {
        send(res, scripted ?? correct(route, recorded, id), req.socket);
      } catch {
        send(
          res,
          { status: 500, body: { error: { message: 'fake server could not answer' } } },
          req.socket,
        );
      }
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  fake.port = port;
  fake.url = `http://127.0.0.1:${port}`;
  fake.close = () =>
    new Promise<void>((resolve) => {
      for (const socket of sockets) socket.destroy();
      server.close(() => resolve());
    });
  return fake;
}

/** A port on 127.0.0.1 where nothing listens (bound, then released). */
export async function closedPortUrl(): Promise<string> {
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}`;
}
