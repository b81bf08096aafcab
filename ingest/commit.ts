import { METADATA_LIMITS } from '../core/archive';
import { uuidv7 } from '../core/ids';
import { stampImported } from '../core/lineStates';
import type { MediaInfo, MediaKind } from '../core/media';
import type { DescriptionSheet } from '../core/metadataCsv';
import {
  insertBlob,
  lockBlobForReference,
  lockStagedCleanups,
  retireBlobCleanup,
} from '../db/blobs';
import { RevisionConflictError } from '../db/errors';
import {
  type BatchResult,
  createBatch,
  createPage,
  type FileOutcome,
  findBatchByIdempotencyKey,
  insertBatchPage,
  type NewItemFields,
  prepareItem,
  recordBatchJobs,
} from '../db/ingest';
import { type Pool, type PoolClient, withTransaction } from '../db/pool';
import { commitRevision } from '../db/revisions';
import type { IngestRequestFields } from './request';
import type { StoredTranscript } from './transcripts';

/**
 * Step 5 of an ingest, once every file is stored under its canonical key: one transaction
 * records the batch, its items, blobs and pages at revision 0, retires the staged rows and
 * records the caller's jobs. A batch with the same idempotency key that committed first wins:
 * its result replaces ours (`Replay`), and our rows roll back.
 */

export interface IngestedPage {
  pageId: number;
  itemId: string;
  canvasUri: string;
  kind: MediaKind;
  mediaType: string;
  blobKey: string;
}

/**
 * Job creation belongs to the caller: called inside the commit transaction with the new
 * pages; the returned job ids are stored with the batch and returned.
 */
export type CreateJobs = (
  tx: PoolClient,
  pages: IngestedPage[],
  fields: IngestRequestFields,
  batchId: string,
) => Promise<Array<{ pageId: number; jobId: string }>>;

/** A file written and inspected, its staged row settled on the canonical key. */
export interface StoredFile {
  index: number;
  cleanupId: number;
  key: string;
  sha256: string;
  size: number;
  info: MediaInfo;
  filename: string | null;
  /** I3: the PAGE or ALTO transcript uploaded beside this image, read and checked. */
  transcript?: StoredTranscript;
  /** I5: the page (from 1) of the PDF or multi-page TIFF this image was taken from. */
  page?: number;
}

/** Replaces an in-flight ingest with an earlier batch's result (same idempotency key). */
export class Replay {
  constructor(readonly result: BatchResult) {}
}

export async function commitBatch(
  deps: { pool: Pool; createJobs?: CreateJobs },
  workspaceId: number,
  fields: IngestRequestFields,
  files: StoredFile[],
  publicBaseUrl: string,
  /** I9: the files refused alone while the request was read; the batch keeps them. */
  refused: FileOutcome[] = [],
  /** F5: the new items' descriptions by file name. */
  sheet?: DescriptionSheet,
): Promise<BatchResult> {
  const outcomes = fileOutcomes(files, refused);
  try {
    return await withTransaction(deps.pool, async (tx) => {
      // First: no cleanup may take these reservations over while the pages are written.
      await lockStagedCleanups(
        tx,
        files.map((f) => f.cleanupId),
      );
      const batchId = await createBatch(tx, workspaceId, fields.idempotencyKey, outcomes);
      if (batchId === undefined) {
        // A concurrent request with the same key committed first: roll back, return its result.
        throw new Replay(await loadLatestResult(tx, workspaceId, fields.idempotencyKey!));
      }
      const pages: IngestedPage[] = [];
      const imported = new Set<number>();
      const importedAt = new Date().toISOString();
      let singleItem: { id: string; next: number } | undefined;
      // I5: every page of one PDF or TIFF goes to one item, also in perFile mode.
      const perFileItems = new Map<number, { id: string; next: number }>();
      for (const [ordinal, file] of files.entries()) {
        let itemId: string;
        let position: number;
        if (fields.mode === 'single') {
          if (!singleItem) {
            const id = fields.itemId ?? uuidv7();
            singleItem = {
              id,
              next: await prepareItem(
                tx,
                workspaceId,
                id,
                itemFields(fields, file.filename, sheet, true),
              ),
            };
          }
          itemId = singleItem.id;
          position = singleItem.next++;
        } else {
          let item = perFileItems.get(file.index);
          if (!item) {
            const id = uuidv7();
            item = {
              id,
              next: await prepareItem(
                tx,
                workspaceId,
                id,
                itemFields(fields, file.filename, sheet),
              ),
            };
            perFileItems.set(file.index, item);
          }
          itemId = item.id;
          position = item.next++;
        }
        await insertBlob(tx, {
          key: file.key,
          workspaceId,
          sha256hex: file.sha256,
          sizeBytes: file.size,
          mediaType: file.info.mediaType,
        });
        // U3: the same check every reference creator makes, in the page's own transaction.
        await lockBlobForReference(tx, workspaceId, file.key);
        const page = await createPage(
          tx,
          {
            workspaceId,
            itemId,
            position,
            kind: file.info.kind,
            blobKey: file.key,
            mediaType: file.info.mediaType,
            width: file.info.width ?? null,
            height: file.info.height ?? null,
            durationMs: file.info.durationMs ?? null,
          },
          publicBaseUrl,
        );
        if (file.transcript) {
          // I3: the imported transcript is revision 1, in the page's own transaction, so a page
          // with one never exists without it (and a refused upload stores neither).
          const { parsed, sha256, filename, page: documentPage, url } = file.transcript;
          const written = await commitRevision(tx, {
            pageId: page.pageId,
            canvasUri: page.canvasUri,
            expectedRevision: 0,
            // V10: imported lines say so, with their source; ground truth is verified.
            segments: stampImported(parsed.segments, parsed.format, importedAt, {
              verified: fields.transcriptVerified,
            }),
            ...(parsed.language ? { language: parsed.language } : {}),
            provenance: {
              source: 'import',
              import: {
                format: parsed.format,
                namespace: parsed.namespace,
                producer: parsed.producer,
                sha256,
                filename,
                ...(documentPage !== undefined ? { page: documentPage } : {}),
                ...(url !== undefined ? { url } : {}),
              },
            },
          });
          if (written.state === 'conflict') throw new RevisionConflictError(page.pageId, written);
          // I5: a PDF's text layer is read again by an engine only when the upload asks.
          if (parsed.format !== 'pdf' || !fields.transcribeTextLayer) imported.add(page.pageId);
        }
        await retireBlobCleanup(tx, file.cleanupId);
        await insertBatchPage(tx, { batchId, ordinal, pageId: page.pageId });
        pages.push({
          ...page,
          itemId,
          kind: file.info.kind,
          mediaType: file.info.mediaType,
          blobKey: file.key,
        });
      }
      // I3: an imported transcript is the page's work; no job overwrites it unasked. A job
      // started later re-reads the page on the imported line boxes.
      const toTranscribe = pages.filter((p) => !imported.has(p.pageId));
      const jobs =
        deps.createJobs && toTranscribe.length > 0
          ? await deps.createJobs(tx, toTranscribe, fields, batchId)
          : [];
      await recordBatchJobs(tx, batchId, jobs);
      const jobOf = new Map(jobs.map((j) => [j.pageId, j.jobId]));
      return {
        batchId,
        files: outcomes,
        pages: pages.map((p) => {
          const jobId = jobOf.get(p.pageId);
          return {
            pageId: p.pageId,
            itemId: p.itemId,
            canvasUri: p.canvasUri,
            ...(jobId ? { jobId } : {}),
          };
        }),
      };
    });
  } catch (error) {
    if ((error as { code?: string }).code === '23505' && fields.idempotencyKey) {
      // The idempotency key's unique index decided the race after our insert started waiting.
      const earlier = await findBatchByIdempotencyKey(
        deps.pool,
        workspaceId,
        fields.idempotencyKey,
      );
      if (earlier) throw new Replay(earlier);
    }
    throw error;
  }
}

/** I9: every file's outcome in upload order: stored as its pages, or refused alone. */
function fileOutcomes(files: StoredFile[], refused: FileOutcome[]): FileOutcome[] {
  const stored = new Map<number, FileOutcome & { status: 'stored' }>();
  for (const file of files) {
    const outcome = stored.get(file.index);
    if (outcome) outcome.pages++;
    else
      stored.set(file.index, {
        index: file.index,
        filename: file.filename,
        status: 'stored',
        pages: 1,
      });
  }
  return [...stored.values(), ...refused].sort((a, b) => a.index - b.index);
}

async function loadLatestResult(
  tx: PoolClient,
  workspaceId: number,
  idempotencyKey: string,
): Promise<BatchResult> {
  const found = await findBatchByIdempotencyKey(tx, workspaceId, idempotencyKey);
  if (!found) throw new Error('idempotency conflict without a batch');
  return found;
}

/**
 * A new item: its title, collection and description (F5: the batch's, then its sheet row's),
 * and (V9) the engine choice its jobs and re-runs inherit. One item of many files is named by
 * the batch's title, else by its first file's row.
 */
function itemFields(
  fields: IngestRequestFields,
  filename: string | null,
  sheet: DescriptionSheet | undefined,
  single = false,
): NewItemFields {
  const row = filename ? sheet?.get(filename) : undefined;
  return {
    title: single
      ? (fields.title ?? row?.title ?? null)
      : (row?.title ?? (filename ? filename.slice(0, 200) : null)),
    externalReferenceId: fields.externalReferenceId,
    metadata: fields.metadata,
    descriptiveMetadata: [...fields.descriptiveMetadata, ...(row?.metadata ?? [])].slice(
      0,
      METADATA_LIMITS.entries,
    ),
    collectionId: fields.collectionId,
    language: row?.language ?? fields.language,
    provider: fields.provider,
    model: fields.model,
  };
}
