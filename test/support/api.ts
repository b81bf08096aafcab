import { file, png, uploadRequest } from './uploadFixtures';

/**
 * Calls Next route handlers in-process, as Next would: a Request and `{ params: Promise }`.
 * Every response body is kept so a test can grep all of them for secrets at the end.
 */
export type RouteModule = Record<string, unknown>;

export interface CallOptions {
  key?: string;
  body?: unknown;
  rawBody?: string | Uint8Array;
  contentType?: string;
  headers?: Record<string, string>;
  signal?: AbortSignal;
}

export interface CallResult {
  status: number;
  headers: Headers;
  text: string;
  // biome-ignore lint/suspicious/noExplicitAny: test bodies are read loosely
  json: any;
}

export const seenBodies: string[] = [];

export function request(method: string, path: string, options: CallOptions = {}): Request {
  const headers: Record<string, string> = { ...(options.headers ?? {}) };
  if (options.key) headers.authorization = `Bearer ${options.key}`;
  let body: BodyInit | undefined;
  if (options.rawBody !== undefined) {
    body = options.rawBody as BodyInit;
    if (options.contentType) headers['content-type'] = options.contentType;
  } else if (options.body !== undefined) {
    body = JSON.stringify(options.body);
    headers['content-type'] = options.contentType ?? 'application/json';
  }
  return new Request(`http://quire.test/api/v1${path}`, {
    method,
    headers,
    body,
    signal: options.signal,
  });
}

export async function call(
  module: RouteModule,
  method: string,
  path: string,
  params: Record<string, string>,
  options: CallOptions = {},
): Promise<CallResult> {
  const handler = module[method] as
    | ((
        request: Request,
        context: { params: Promise<Record<string, string>> },
      ) => Promise<Response>)
    | undefined;
  if (!handler) throw new Error(`route has no ${method}`);
  const response = await handler(request(method, path, options), {
    params: Promise.resolve(params),
  });
  const text = await response.text();
  seenBodies.push(text, JSON.stringify([...response.headers]));
  let json: unknown;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  return { status: response.status, headers: response.headers, text, json };
}

export interface SseFrame {
  id?: string;
  event?: string;
  data?: string;
  comment?: string;
  retry?: string;
}

/** Parses a text/event-stream body frame by frame. */
export class SseReader {
  private buffer = '';
  private readonly decoder = new TextDecoder();
  readonly frames: SseFrame[] = [];

  constructor(private readonly reader: ReadableStreamDefaultReader<Uint8Array>) {}

  static of(response: Response): SseReader {
    if (!response.body) throw new Error('no body');
    return new SseReader(response.body.getReader());
  }

  /** The next frame that is not a comment, or throws after `timeoutMs`. */
  async next(timeoutMs = 10_000, options: { comments?: boolean } = {}): Promise<SseFrame> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const frame = this.take();
      if (frame) {
        this.frames.push(frame);
        if (
          options.comments ||
          frame.comment === undefined ||
          frame.event !== undefined ||
          frame.data !== undefined
        ) {
          return frame;
        }
        continue;
      }
      const left = deadline - Date.now();
      if (left <= 0) throw new Error('no SSE frame in time');
      let timer: NodeJS.Timeout | undefined;
      const chunk = await Promise.race([
        this.reader.read(),
        new Promise<'timeout'>((resolve) => {
          timer = setTimeout(() => resolve('timeout'), left);
        }),
      ]);
      clearTimeout(timer);
      if (chunk === 'timeout') throw new Error('no SSE frame in time');
      if (chunk.done) throw new Error('stream ended');
      const text = this.decoder.decode(chunk.value, { stream: true });
      seenBodies.push(text);
      this.buffer += text;
    }
  }

  /** Frames until `predicate` holds for one (inclusive). */
  async until(predicate: (frame: SseFrame) => boolean, timeoutMs = 10_000): Promise<SseFrame[]> {
    const out: SseFrame[] = [];
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const frame = await this.next(Math.max(1, deadline - Date.now()));
      out.push(frame);
      if (predicate(frame)) return out;
    }
  }

  async close() {
    await this.reader.cancel().catch(() => {});
  }

  private take(): SseFrame | undefined {
    const end = this.buffer.indexOf('\n\n');
    if (end < 0) return undefined;
    const raw = this.buffer.slice(0, end);
    this.buffer = this.buffer.slice(end + 2);
    const frame: SseFrame = {};
    for (const line of raw.split('\n')) {
      if (line.startsWith(':')) frame.comment = line.slice(1).trim();
      else {
        const at = line.indexOf(':');
        const field = at < 0 ? line : line.slice(0, at);
        const value = at < 0 ? '' : line.slice(at + 1).replace(/^ /, '');
        if (field === 'id' || field === 'event' || field === 'retry') frame[field] = value;
        else if (field === 'data')
          frame.data = frame.data === undefined ? value : `${frame.data}\n${value}`;
      }
    }
    return frame;
  }
}

/**
 * One small PNG uploaded through `POST /workspaces/{ws}/batches` with a workspace's key, as an
 * integrator would; the caller asserts the status.
 */
export async function uploadWithKey(ws: number, key: string, fileName = 'page.png') {
  const batches: RouteModule = await import('../../web/app/api/v1/workspaces/[ws]/batches/route');
  return call(
    batches,
    'POST',
    `/workspaces/${ws}/batches`,
    { ws: String(ws) },
    {
      key,
      rawBody: new Uint8Array(await uploadRequest([file(png(40, 20), fileName)]).arrayBuffer()),
      contentType: uploadRequest([]).headers.get('content-type')!,
    },
  );
}
