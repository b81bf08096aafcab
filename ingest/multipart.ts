import { Readable } from 'node:stream';
import type { ReadableStream as NodeWebReadableStream } from 'node:stream/web';
import busboy from 'busboy';
import { MAX_CSV_BYTES } from '../core/metadataCsv';
import {
  applyField,
  emptyFields,
  FILE_FIELDS,
  IngestError,
  type IngestLimits,
  type IngestRequestFields,
  safeName,
} from './request';
import { discardRestOf } from './requestBody';
import { TRANSCRIPT_FIELD } from './transcripts';

/**
 * Reading an ingest request (SPEC §7): its headers, then its multipart body as text fields,
 * each checked as it arrives, and file parts, each handed over as a stream. Parts are handled
 * one at a time, in upload order; the first refusal stops the reading, and the rest of the
 * body is read and thrown away, never cancelled (R6).
 */

export interface PartHandlers {
  /** A part of `files[]`; `index` counts the request's files in upload order, transcripts aside. */
  file(index: number, stream: Readable, filename: string | null): Promise<void>;
  /** I3: a transcript part, which belongs to the image stored just before it. */
  transcript(stream: Readable, filename: string | null): Promise<void>;
}

export interface IngestRequest {
  /** The text fields as read so far (the Idempotency-Key header from the start). */
  fields: IngestRequestFields;
  /** The request's Content-Length, NaN when it declared none. */
  declaredLength: number;
  /** Reads the body to its end, each part through `handlers`; rejects with the first refusal. */
  read(handlers: PartHandlers): Promise<void>;
  /**
   * Stops reading and waits for the part being handled to settle (so every write it began is
   * known); answers the first refusal met while reading, if any.
   */
  abandon(): Promise<unknown>;
}

/**
 * Refuses a request on its headers before any byte of its body is read; the order (type,
 * length, body, Idempotency-Key, boundary) decides which refusal a request with several
 * faults gets.
 */
export function openIngestRequest(request: Request, limits: IngestLimits): IngestRequest {
  const contentType = request.headers.get('content-type') ?? '';
  if (!/^multipart\/form-data\b/i.test(contentType)) {
    throw new IngestError('invalid_content_type', 'the request must be multipart/form-data');
  }
  const declaredLength = Number(request.headers.get('content-length') ?? Number.NaN);
  if (Number.isFinite(declaredLength) && declaredLength > limits.maxRequestBytes) {
    throw new IngestError(
      'request_too_large',
      `the request is larger than ${limits.maxRequestBytes} bytes`,
    );
  }
  if (!request.body) throw new IngestError('no_files', 'the request carries no files');

  const fields = emptyFields(request);
  const source = Readable.fromWeb(request.body as unknown as NodeWebReadableStream<Uint8Array>);
  let parser: busboy.Busboy;
  try {
    parser = busboy({
      headers: { 'content-type': contentType },
      limits: {
        // Each image may bring a transcript part (I3); images alone are counted against maxFiles.
        files: limits.maxFiles * 2,
        fields: 32,
        // F5: a metadata sheet is the largest field; every field checks its own size.
        fieldSize: Math.max(limits.maxMetadataBytes, MAX_CSV_BYTES),
        parts: limits.maxFiles * 2 + 32,
      },
    });
  } catch {
    throw new IngestError('invalid_request', 'the multipart body has no boundary');
  }
  const body = new MultipartBody(source, parser, limits, fields);
  return {
    fields,
    declaredLength,
    read: (handlers) => body.read(handlers),
    abandon: () => body.abandon(),
  };
}

/** The body being read: the first refusal met, and the part being handled. */
class MultipartBody {
  private failure: unknown;
  private currentStream: Readable | undefined;
  private failed: (error: unknown) => void = () => {};
  private readonly aborted = new Promise<never>((_, reject) => {
    this.failed = reject;
  });
  // Files are handled one at a time, in upload order; busboy moves on to the next part only
  // once the current file stream has been consumed, which is the backpressure we want.
  private chain: Promise<void> = Promise.resolve();

  constructor(
    private readonly source: Readable,
    private readonly parser: busboy.Busboy,
    private readonly limits: IngestLimits,
    private readonly fields: IngestRequestFields,
  ) {
    this.aborted.catch(() => {});
  }

  async read(handlers: PartHandlers): Promise<void> {
    const { source, parser } = this;
    this.listen(handlers);
    const parsed = new Promise<void>((resolve, reject) => {
      parser.on('close', resolve);
      parser.on('error', reject);
    });
    source.pipe(parser);
    await Promise.race([parsed, this.aborted]);
    await Promise.race([this.chain, this.aborted]);
    if (this.failure !== undefined) throw this.failure;
  }

  async abandon(): Promise<unknown> {
    this.source.unpipe(this.parser);
    discardRestOf(this.source);
    this.currentStream?.destroy();
    // Every part's task has settled (its stream is ended), so every write it began is known.
    await this.chain;
    return this.failure;
  }

  private listen(handlers: PartHandlers): void {
    const { source, parser, limits } = this;
    const fail = (error: unknown) => this.fail(error);
    let received = 0;
    let fileCount = 0;
    source.on('data', (chunk: Buffer) => {
      received += chunk.length;
      if (received > limits.maxRequestBytes) {
        fail(
          new IngestError(
            'request_too_large',
            `the request is larger than ${limits.maxRequestBytes} bytes`,
          ),
        );
      }
    });
    source.on('error', (error) => fail(error));

    parser.on('field', (name, value, info) => {
      try {
        if (info.valueTruncated) {
          throw new IngestError('field_too_large', `the field ${safeName(name)} is too large`);
        }
        applyField(this.fields, name, value, limits);
      } catch (error) {
        fail(error);
      }
    });
    parser.on('file', (name, stream, info) => {
      // A truncated body errors the part's stream, possibly before this part is consumed; the
      // error reaches the writer through its iterator or the parser's own 'error' event.
      stream.on('error', () => {});
      const filename = info.filename ?? null;
      if (name === TRANSCRIPT_FIELD) {
        this.handlePart(stream, () => handlers.transcript(stream, filename));
        return;
      }
      if (fileCount >= limits.maxFiles) {
        stream.resume();
        fail(
          new IngestError('too_many_files', `a request carries at most ${limits.maxFiles} files`),
        );
        return;
      }
      const index = fileCount++;
      this.handlePart(stream, async () => {
        if (!FILE_FIELDS.has(name)) {
          throw new IngestError(
            'unexpected_field',
            `unexpected file field ${safeName(name)}; use files[]`,
          );
        }
        await handlers.file(index, stream, filename);
      });
    });
    parser.on('filesLimit', () =>
      fail(new IngestError('too_many_files', `a request carries at most ${limits.maxFiles} files`)),
    );
    parser.on('partsLimit', () =>
      fail(new IngestError('too_many_parts', 'the request has too many parts')),
    );
    parser.on('fieldsLimit', () =>
      fail(new IngestError('too_many_fields', 'the request has too many fields')),
    );
  }

  /**
   * Every part, file or transcript, waits for the one before it; after a refusal it is only
   * drained, so the parser reaches the end of the body.
   */
  private handlePart(stream: Readable, handle: () => Promise<void>): void {
    this.chain = this.chain.then(async () => {
      if (this.failure !== undefined) {
        stream.resume();
        return;
      }
      this.currentStream = stream;
      try {
        await handle();
      } catch (error) {
        stream.resume();
        this.fail(error);
      } finally {
        this.currentStream = undefined;
      }
    });
  }

  private fail(error: unknown): void {
    if (this.failure !== undefined) return;
    this.failure = error;
    this.source.unpipe(this.parser);
    // Never destroyed: that cancels the server's body stream under a client still sending (R6).
    discardRestOf(this.source);
    // The file being written ends with an error, so its temporary is removed and the chain settles.
    this.currentStream?.destroy();
    this.failed(error);
  }
}
