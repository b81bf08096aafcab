import { z } from 'zod';
import { METADATA_LIMITS, type MetadataEntry } from '../core/archive';
import { DomainError, type ErrorCode } from '../core/errors';
import {
  DEFAULT_TRANSCRIPT_LIMITS,
  type TranscriptLimits,
} from '../core/interchange/transcriptImport';
import { languageTag } from '../core/jobRequest';
import { jsonTooDeep, MAX_JSON_DEPTH } from '../core/jsonDepth';
import { DEFAULT_MEDIA_LIMITS, type MediaLimits } from '../core/media';
import { MAX_CSV_BYTES } from '../core/metadataCsv';
import { describeTextFault, findTextFault, textFault } from '../core/text';

/**
 * What an ingest request may say besides its files: the text fields of the multipart form and
 * the Idempotency-Key header, each checked as it arrives, and the limits of a request. A
 * refusal is an `IngestError` whose message names fields, never their content.
 */

export interface IngestLimits extends MediaLimits, TranscriptLimits {
  maxFiles: number;
  /** Bytes of the whole request body. */
  maxRequestBytes: number;
  /** Bytes of the `metadata` JSON field. */
  maxMetadataBytes: number;
  /** I5: pages one request may make of its PDFs and multi-page TIFFs together. */
  maxPagesPerRequest: number;
}

export const DEFAULT_INGEST_LIMITS: IngestLimits = {
  ...DEFAULT_MEDIA_LIMITS,
  ...DEFAULT_TRANSCRIPT_LIMITS,
  maxFiles: 500,
  maxRequestBytes: 2 * 1024 * 1024 * 1024,
  maxMetadataBytes: 16 * 1024,
  maxPagesPerRequest: 5000,
};

export interface IngestRequestFields {
  itemId: string | null;
  externalReferenceId: string | null;
  idempotencyKey: string | null;
  metadata: Record<string, unknown>;
  provider: string | null;
  /** V9: the model and language its jobs read with, kept on the items it makes. */
  model: string | null;
  language: string | null;
  /** F5: the new items' collection and (one item) title. */
  collectionId: number | null;
  title: string | null;
  /** F5: label/value pairs for every new item of the batch. */
  descriptiveMetadata: MetadataEntry[];
  /** F5: a CSV sheet describing the new items, one row per file (read once the files are known). */
  descriptions: string | null;
  mode: 'single' | 'perFile';
  /** I5: start engine jobs for PDF pages whose text layer was imported, too. */
  transcribeTextLayer: boolean;
  /** V10: the imported transcripts are ground truth: their lines are verified on import. */
  transcriptVerified: boolean;
}

/** A refused request: a stable `code`, and the index of the file it is about when it is about one. */
export class IngestError extends DomainError {
  override name = 'IngestError';
  constructor(
    code: ErrorCode,
    message?: string,
    /** Index of the file (in upload order) the error is about, when it is about one. */
    readonly fileIndex?: number,
  ) {
    super(code, message, fileIndex !== undefined ? { fileIndex } : undefined);
  }
}

const metadataText = (max: number) => z.string().trim().min(1).max(max);
const metadataEntriesSchema = z
  .array(
    z
      .object({
        label: metadataText(METADATA_LIMITS.label),
        value: metadataText(METADATA_LIMITS.value),
      })
      .strict(),
  )
  .max(METADATA_LIMITS.entries);

export const FILE_FIELDS = new Set(['files[]', 'files', 'file']);
const TEXT_FIELDS = new Set([
  'itemId',
  'externalReferenceId',
  'idempotencyKey',
  'metadata',
  'provider',
  'model',
  'language',
  'collectionId',
  'title',
  'descriptiveMetadata',
  'descriptions',
  'mode',
  'transcribeTextLayer',
  'transcriptVerified',
]);
const ID_PATTERN = /^[A-Za-z0-9._:~-]{1,200}$/;

/**
 * Why a new item may not take this id, or undefined. R6: `.` and `..` are path segments every
 * client resolves away: the item's canvas and manifest URIs would name another path.
 */
export function itemIdRefusal(value: string): string | undefined {
  if (value === '.' || value === '..') return 'itemId cannot be . or ..';
  if (!ID_PATTERN.test(value)) return 'itemId must be 1-200 letters, digits or . _ : ~ -';
  return undefined;
}

export function emptyFields(request: Request): IngestRequestFields {
  return {
    itemId: null,
    externalReferenceId: null,
    idempotencyKey: headerIdempotencyKey(request),
    metadata: {},
    provider: null,
    model: null,
    language: null,
    collectionId: null,
    title: null,
    descriptiveMetadata: [],
    descriptions: null,
    mode: 'single',
    transcribeTextLayer: false,
    transcriptVerified: false,
  };
}

export function applyField(
  fields: IngestRequestFields,
  name: string,
  value: string,
  limits: IngestLimits,
): void {
  if (!TEXT_FIELDS.has(name)) {
    throw new IngestError('unexpected_field', `unexpected field ${safeName(name)}`);
  }
  // R6: text PostgreSQL cannot hold is a 400 here, not an error when the batch is written.
  const fault = textFault(value);
  if (fault) throw new IngestError('invalid_text', `${name} ${describeTextFault(fault)}`);
  switch (name) {
    case 'itemId':
    case 'idempotencyKey':
      if (name === 'itemId' && itemIdRefusal(value)) {
        throw new IngestError('invalid_field', itemIdRefusal(value)!);
      }
      if (!ID_PATTERN.test(value)) {
        throw new IngestError(
          'invalid_field',
          `${name} must be 1-200 letters, digits or . _ : ~ -`,
        );
      }
      fields[name] = value;
      return;
    case 'externalReferenceId':
      if (value.length < 1 || value.length > 200) {
        throw new IngestError('invalid_field', 'externalReferenceId must be 1-200 characters');
      }
      fields.externalReferenceId = value;
      return;
    case 'provider':
      if (!/^[a-z0-9_-]{1,64}$/.test(value))
        throw new IngestError('invalid_field', 'provider is not a name');
      fields.provider = value;
      return;
    case 'model':
    case 'title':
      if (value.trim().length < 1 || value.length > (name === 'title' ? 500 : 128)) {
        throw new IngestError(
          'invalid_field',
          `${name} must be 1-${name === 'title' ? 500 : 128} characters`,
        );
      }
      fields[name] = value.trim();
      return;
    case 'language':
      if (!languageTag.safeParse(value).success) {
        throw new IngestError(
          'invalid_field',
          'language must be a language code such as en, de or frk',
        );
      }
      fields.language = value;
      return;
    case 'descriptions':
      if (Buffer.byteLength(value) > MAX_CSV_BYTES) {
        throw new IngestError(
          'invalid_csv',
          `the metadata sheet is larger than ${MAX_CSV_BYTES} bytes`,
        );
      }
      fields.descriptions = value;
      return;
    case 'descriptiveMetadata': {
      if (Buffer.byteLength(value) > limits.maxMetadataBytes) {
        throw new IngestError(
          'metadata_too_large',
          `descriptiveMetadata is larger than ${limits.maxMetadataBytes} bytes`,
        );
      }
      let entries: unknown;
      try {
        entries = JSON.parse(value);
      } catch {
        entries = undefined;
      }
      const parsed = metadataEntriesSchema.safeParse(entries);
      if (!parsed.success) {
        throw new IngestError(
          'invalid_field',
          'descriptiveMetadata must be a JSON array of {label, value}',
        );
      }
      fields.descriptiveMetadata = parsed.data;
      return;
    }
    case 'collectionId':
      if (!/^[1-9][0-9]{0,15}$/.test(value)) {
        throw new IngestError('invalid_field', 'collectionId must be a collection id');
      }
      fields.collectionId = Number(value);
      return;
    case 'mode':
      if (value !== 'single' && value !== 'perFile') {
        throw new IngestError(
          'invalid_field',
          'mode must be single (one item) or perFile (one item per file)',
        );
      }
      fields.mode = value;
      return;
    case 'transcribeTextLayer':
    case 'transcriptVerified':
      if (value !== 'true' && value !== 'false') {
        throw new IngestError('invalid_field', `${name} must be true or false`);
      }
      fields[name] = value === 'true';
      return;
    case 'metadata': {
      if (Buffer.byteLength(value) > limits.maxMetadataBytes) {
        throw new IngestError(
          'metadata_too_large',
          `metadata is larger than ${limits.maxMetadataBytes} bytes`,
        );
      }
      if (jsonTooDeep(value)) {
        throw new IngestError(
          'json_too_deep',
          `metadata may nest at most ${MAX_JSON_DEPTH} levels`,
        );
      }
      let parsed: unknown;
      try {
        parsed = JSON.parse(value);
      } catch {
        throw new IngestError('invalid_metadata', 'metadata must be a JSON object');
      }
      if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
        throw new IngestError('invalid_metadata', 'metadata must be a JSON object');
      }
      // A `\u0000` or lone-surrogate escape in the JSON is such text once parsed.
      const inner = findTextFault(parsed);
      if (inner) {
        throw new IngestError(
          'invalid_text',
          `metadata.${inner.path} ${describeTextFault(inner.fault)}`,
        );
      }
      fields.metadata = parsed as Record<string, unknown>;
      return;
    }
  }
}

function headerIdempotencyKey(request: Request): string | null {
  const value = request.headers.get('idempotency-key');
  if (value === null) return null;
  if (!ID_PATTERN.test(value)) {
    throw new IngestError(
      'invalid_field',
      'Idempotency-Key must be 1-200 letters, digits or . _ : ~ -',
    );
  }
  return value;
}

/** Field names are echoed in errors only when they look like names, never as raw input. */
export function safeName(name: string): string {
  return /^[A-Za-z0-9_[\]-]{1,40}$/.test(name) ? name : '(unnamed)';
}
