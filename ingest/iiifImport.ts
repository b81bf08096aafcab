import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import type { BlobStore } from '../blobs/store';
import type { Segment } from '../core/annotation';
import { DEFAULT_PUBLIC_URL } from '../core/config';
import { DomainError } from '../core/errors';
import {
  annotationLines,
  imageRequest,
  infoSizes,
  type PlannedCanvas,
  type PlannedManifest,
  readManifest,
  scaleSegments,
} from '../core/interchange/iiifManifest';
import {
  type ImportedTranscript,
  parseTranscript,
  TranscriptRejection,
} from '../core/interchange/transcriptImport';
import type { MediaInfo } from '../core/media';
import { describeTextFault, MAX_LINE_CHARS, textFault } from '../core/text';
import type { BatchResult } from '../db/ingest';
import type { Pool } from '../db/pool';
import { fetchableUrl, guardedGet } from '../net/guardedFetch';
import type { AllowList, LookupAll } from '../net/ssrf';
import { type CreateJobs, commitBatch, type StoredFile } from './commit';
import { discardStagedUploads } from './deletion';
import { DEFAULT_INGEST_LIMITS, type IngestLimits, type IngestRequestFields } from './request';
import type { StoredTranscript } from './transcripts';
import { type BatchUploads, inspectUpload, settleUpload, writeUpload } from './upload';

/**
 * F8: an item made from a IIIF Presentation 2 or 3 manifest URL. The manifest is fetched under
 * the SSRF rules (net/guardedFetch.ts), read (core/interchange/iiifManifest.ts) and each
 * canvas, in order, becomes a page: its image fetched through the manifest's Image API service
 * at a stated size (the full image when its longest side is within `imageMaxSide`, else the
 * service scales it, or a level-0 service's listed size), or the painted image when there is no
 * service. A canvas's text annotations (v3 `annotations`, v2 `otherContent`) or, failing
 * those, an ALTO, PAGE or hOCR file it names in `seeAlso`, become the page's revision 1 with
 * the `imported` line state, in the image's pixels. Each image is stored as an upload is
 * (ingest/upload.ts: staged, inspected, settled) and the item, its pages and revisions are
 * written in the one commit of an ingest (ingest/commit.ts); pages without a transcription get
 * a job as uploaded pages do. Any refusal stores nothing.
 */

export interface IiifImportSettings {
  allowHosts: AllowList;
  imageMaxSide: number;
  maxCanvases: number;
  maxDocumentBytes: number;
  maxImageBytes: number;
  timeoutMs: number;
  lookup?: LookupAll;
}

export interface IiifImportDeps {
  pool: Pool;
  blobStore: BlobStore;
  publicBaseUrl?: string;
  globalQuotaBytes?: number | null;
  limits?: Partial<IngestLimits>;
  createJobs?: CreateJobs;
  iiif: IiifImportSettings;
}

export interface IiifImportRequest {
  manifestUrl: string;
  collectionId: number | null;
  /** Replaces the manifest's label as the item's title. */
  title: string | null;
}

export interface IiifImportResult extends BatchResult {
  manifest: { version: 2 | 3; canvases: number; transcribed: number };
}

/** The URL as provenance keeps it: no query or fragment, which may carry a token. */
export function sourceUrl(url: URL | string): string {
  const u = new URL(String(url));
  return `${u.origin}${u.pathname}`.slice(0, 1000);
}

export async function importIiifManifest(
  deps: IiifImportDeps,
  workspaceId: number,
  request: IiifImportRequest,
): Promise<IiifImportResult> {
  const { iiif } = deps;
  const limits: IngestLimits = { ...DEFAULT_INGEST_LIMITS, ...deps.limits };
  const manifestUrl = fetchableUrl(request.manifestUrl, 'the manifest URL');
  const document = (maxBytes: number) => ({
    allowHosts: iiif.allowHosts,
    lookup: iiif.lookup,
    timeoutMs: iiif.timeoutMs,
    maxBytes,
  });
  const fetched = await guardedGet(
    manifestUrl,
    { ...document(iiif.maxDocumentBytes), accept: 'application/ld+json, application/json' },
    'the manifest',
  );
  const manifest = readManifest(fetched.bytes, { maxCanvases: iiif.maxCanvases });

  const uploads: BatchUploads = {
    pool: deps.pool,
    blobStore: deps.blobStore,
    workspaceId,
    limits,
    now: () => new Date(),
    globalQuotaBytes: deps.globalQuotaBytes ?? null,
    reservationMs: 60 * 60 * 1000,
    pdfDpi: 300,
    step: async () => {},
    declaredLength: Number.NaN,
    uploadedBytes: 0,
    stored: [],
    staged: [],
    documentSources: [],
  };
  try {
    let transcribed = 0;
    for (const [index, canvas] of manifest.canvases.entries()) {
      const file = await storeCanvas(uploads, iiif, manifest, canvas, index, document);
      if (file.transcript) transcribed++;
      uploads.stored.push(file);
    }
    const fields: IngestRequestFields = {
      itemId: null,
      externalReferenceId: null,
      idempotencyKey: null,
      metadata: { iiifManifest: sourceUrl(fetched.url) },
      provider: null,
      model: null,
      language: null,
      collectionId: request.collectionId,
      title: request.title ?? manifest.label,
      descriptiveMetadata: manifest.metadata,
      descriptions: null,
      mode: 'single',
      transcribeTextLayer: false,
      transcriptVerified: false,
    };
    const result = await commitBatch(
      deps,
      workspaceId,
      fields,
      uploads.stored,
      deps.publicBaseUrl ?? DEFAULT_PUBLIC_URL,
    );
    return {
      ...result,
      manifest: { version: manifest.version, canvases: manifest.canvases.length, transcribed },
    };
  } catch (error) {
    await discardStagedUploads(deps.pool, deps.blobStore, uploads.staged, new Date());
    throw error;
  }
}

type DocumentOptions = (maxBytes: number) => {
  allowHosts: AllowList;
  lookup?: LookupAll;
  timeoutMs: number;
  maxBytes: number;
};

/** The URL of a canvas's image at a stated size, and that size when it is stated. */
async function imageUrlOf(
  iiif: IiifImportSettings,
  canvas: PlannedCanvas,
  index: number,
  document: DocumentOptions,
): Promise<string> {
  const { service, image } = canvas;
  if (service) {
    const full = {
      width: image.width ?? canvas.width,
      height: image.height ?? canvas.height,
    };
    let request = imageRequest(service, full, iiif.imageMaxSide);
    if (!request) {
      // A level-0 service serves the sizes its info.json lists.
      const info = await guardedGet(
        fetchableUrl(`${service.id}/info.json`, `the image service of canvas ${index + 1}`),
        document(iiif.maxDocumentBytes),
        `the image service of canvas ${index + 1}`,
      );
      request = imageRequest(service, full, iiif.imageMaxSide, infoSizes(info.bytes));
    }
    if (request) return request.url;
  }
  if (image.url) return image.url;
  throw new DomainError(
    'iiif_no_image',
    `canvas ${index + 1} paints no image Quire can fetch at ${iiif.imageMaxSide} pixels or fewer per side`,
  );
}

async function storeCanvas(
  uploads: BatchUploads,
  iiif: IiifImportSettings,
  manifest: PlannedManifest,
  canvas: PlannedCanvas,
  index: number,
  document: DocumentOptions,
): Promise<StoredFile> {
  const what = `the image of canvas ${index + 1}`;
  const url = fetchableUrl(await imageUrlOf(iiif, canvas, index, document), what);
  const image = await guardedGet(url, document(iiif.maxImageBytes), what);
  const upload = await writeUpload(
    uploads,
    index,
    Readable.from([image.bytes]),
    Math.max(1, image.bytes.length),
    true,
  );
  const info = await inspectUpload(uploads, index, upload);
  if (info.kind !== 'image' || !info.width || !info.height || info.frames) {
    throw new DomainError('iiif_no_image', `${what} is not a single image`);
  }
  const file = await settleUpload(uploads, index, upload, null, info);
  const transcript = await transcriptionOf(iiif, manifest, canvas, index, info, document);
  if (transcript) file.transcript = transcript;
  return file;
}

/**
 * The canvas's transcription in the image's pixels: its text annotations, else the first of its
 * `seeAlso` files that is ALTO, PAGE or hOCR; undefined when it has neither.
 */
async function transcriptionOf(
  iiif: IiifImportSettings,
  manifest: PlannedManifest,
  canvas: PlannedCanvas,
  index: number,
  info: MediaInfo,
  document: DocumentOptions,
): Promise<StoredTranscript | undefined> {
  const size = { width: info.width!, height: info.height! };
  const pages: unknown[] = [];
  const hash = createHash('sha256');
  let from: string | undefined;
  for (const ref of canvas.annotationPages) {
    if ('page' in ref) {
      pages.push(ref.page);
      hash.update(JSON.stringify(ref.page));
      continue;
    }
    const what = `an annotation page of canvas ${index + 1}`;
    const got = await guardedGet(
      fetchableUrl(ref.url, what),
      document(iiif.maxDocumentBytes),
      what,
    );
    try {
      pages.push(JSON.parse(got.bytes.toString('utf8')));
    } catch {
      throw new DomainError('iiif_transcription_invalid', `${what} is not JSON`);
    }
    hash.update(got.bytes);
    from ??= sourceUrl(got.url);
  }
  const lines = annotationLines(pages, canvas, size);
  if (lines.length > 0) {
    checkLines(lines, index);
    return stored(
      {
        format: 'iiif',
        namespace: `http://iiif.io/api/presentation/${manifest.version}/context.json`,
        producer: null,
        ...size,
        segments: lines,
      },
      hash.digest('hex'),
      from ?? sourceUrl(manifest.id || canvas.id),
    );
  }
  for (const seeAlso of canvas.seeAlso) {
    const what = `a transcription of canvas ${index + 1}`;
    const got = await guardedGet(
      fetchableUrl(seeAlso, what),
      document(Math.min(iiif.maxDocumentBytes, DEFAULT_INGEST_LIMITS.maxTranscriptBytes)),
      what,
    );
    let parsed: ImportedTranscript;
    try {
      parsed = parseTranscript(got.bytes);
    } catch (error) {
      // Not a transcription Quire reads (a catalogue record, say): the next one may be.
      if (error instanceof TranscriptRejection && /unsupported|malformed/.test(error.code))
        continue;
      if (error instanceof TranscriptRejection) {
        throw new DomainError('iiif_transcription_invalid', `${what}: ${error.message}`);
      }
      throw error;
    }
    return stored(
      { ...parsed, ...size, segments: scaleSegments(parsed.segments, parsed, size) },
      createHash('sha256').update(got.bytes).digest('hex'),
      sourceUrl(got.url),
    );
  }
  return undefined;
}

function stored(parsed: ImportedTranscript, sha256: string, url: string): StoredTranscript {
  return { parsed, sha256, filename: null, url };
}

function checkLines(lines: Segment[], index: number): void {
  for (const line of lines) {
    const fault = textFault(line.text);
    if (fault) {
      throw new DomainError(
        'iiif_transcription_invalid',
        `a line of canvas ${index + 1} ${describeTextFault(fault)}`,
      );
    }
    if (line.text.length > MAX_LINE_CHARS) {
      throw new DomainError(
        'iiif_transcription_invalid',
        `a line of canvas ${index + 1} is longer than ${MAX_LINE_CHARS} characters`,
      );
    }
  }
}
