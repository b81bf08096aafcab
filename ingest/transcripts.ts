import { createHash } from 'node:crypto';
import type { Readable } from 'node:stream';
import {
  type ImportedTranscript,
  parseTranscript,
  type TranscriptLimits,
  TranscriptRejection,
} from '../core/interchange/transcriptImport';
import type { MediaInfo } from '../core/media';
import { IngestError } from './request';

/**
 * I3: the `transcript` part of an upload, a PAGE XML or ALTO file sent right after the image
 * it describes. It is read into memory (bounded by `maxTranscriptBytes`), parsed, and checked
 * against that image before anything of the request is committed; a refusal is an
 * `IngestError` naming the image's index, and the ingest then stores nothing.
 */

export const TRANSCRIPT_FIELD = 'transcript';

export interface StoredTranscript {
  parsed: ImportedTranscript;
  sha256: string;
  filename: string | null;
  /** I5: the page of the uploaded PDF whose text layer this is. */
  page?: number;
  /** F8: where a IIIF import fetched it from (no query). */
  url?: string;
}

async function readBounded(stream: Readable, maxBytes: number, index: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of stream) {
    total += (chunk as Buffer).length;
    if (total > maxBytes) {
      stream.resume();
      throw new IngestError(
        'transcript_too_large',
        `a transcript is larger than ${maxBytes} bytes`,
        index,
      );
    }
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

/**
 * Reads and checks the transcript of the image stored as file `index`: the same kind of page
 * (an image), the same pixel size as the file declares, and only one transcript per image.
 */
export async function readTranscriptPart(
  stream: Readable,
  filename: string | null,
  image:
    | { index: number; info: MediaInfo; transcript?: StoredTranscript; page?: number }
    | undefined,
  limits: TranscriptLimits,
): Promise<StoredTranscript> {
  if (!image) {
    throw new IngestError(
      'transcript_without_image',
      'a transcript must follow the image it describes in files[]',
    );
  }
  if (image.page !== undefined) {
    throw new IngestError(
      'transcript_for_document',
      'a PDF or multi-page TIFF is split into pages; upload a transcript beside a single image',
      image.index,
    );
  }
  if (image.transcript) {
    throw new IngestError(
      'duplicate_transcript',
      'an image takes at most one transcript',
      image.index,
    );
  }
  if (image.info.kind !== 'image') {
    throw new IngestError(
      'transcript_for_audio',
      'PAGE and ALTO transcripts describe images, not recordings',
      image.index,
    );
  }
  const bytes = await readBounded(stream, limits.maxTranscriptBytes, image.index);
  let parsed: ImportedTranscript;
  try {
    parsed = parseTranscript(bytes, limits);
  } catch (error) {
    if (error instanceof TranscriptRejection)
      throw new IngestError(error.code, error.message, image.index);
    throw error;
  }
  if (parsed.width !== image.info.width || parsed.height !== image.info.height) {
    throw new IngestError(
      'transcript_size_mismatch',
      `the transcript describes a ${parsed.width}x${parsed.height} page; the image is ${image.info.width}x${image.info.height}`,
      image.index,
    );
  }
  return {
    parsed,
    sha256: createHash('sha256').update(bytes).digest('hex'),
    filename: filename ? filename.slice(0, 200) : null,
  };
}
