import { createWriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { BlobStore } from '../blobs/store';
import type { StoredFile } from './commit';
import { ingestPdf, ingestTiffFrames, type StorePage } from './documents';
import { IngestError } from './request';
import {
  type BatchUploads,
  fileRefusal,
  settleUpload,
  type WrittenUpload,
  writeUpload,
} from './upload';

/**
 * I5: a PDF's pages or a TIFF's frames, each stored as a page image of its own, in order.
 * The uploaded file itself is read from disk, then given to the fenced deletion once the
 * batch is written (`documentSources`): its pages are what the item keeps.
 */
export async function storeDocumentPages(
  uploads: BatchUploads,
  index: number,
  upload: WrittenUpload,
  filename: string | null,
  format: 'pdf' | 'tiff',
  frames = 0,
): Promise<StoredFile[]> {
  const { limits } = uploads;
  uploads.documentSources.push(upload.cleanupId);
  // The pages of every document of the request are written in its one transaction: bounded.
  const room = Math.max(0, limits.maxPagesPerRequest - uploads.stored.length);
  if (format === 'tiff' && frames > room) {
    throw new IngestError(
      'too_many_pages',
      `a request makes at most ${limits.maxPagesPerRequest} pages`,
      index,
    );
  }
  const pages: StoredFile[] = [];
  const storePage: StorePage = async (image, page) => {
    const written = await writeUpload(uploads, index, image, limits.maxFileBytes, false);
    const file = await settleUpload(uploads, index, written, filename);
    if (file.info.kind !== 'image' || !file.info.width || !file.info.height) {
      throw new IngestError('malformed_media', 'a page is not an image', index);
    }
    file.page = page;
    pages.push(file);
    return { width: file.info.width, height: file.info.height };
  };
  const local = await localCopy(uploads.blobStore, upload.temporaryKey);
  try {
    if (format === 'tiff') {
      await ingestTiffFrames(local.path, frames, storePage);
      return pages;
    }
    const document = await ingestPdf(
      local.path,
      { ...limits, maxPagesPerFile: Math.min(limits.maxPagesPerFile, room) },
      { dpi: uploads.pdfDpi },
      storePage,
    );
    for (const entry of document.pages) {
      const file = pages.find((p) => p.page === entry.page);
      if (file && entry.textLayer) {
        file.transcript = {
          parsed: {
            format: 'pdf',
            namespace: 'application/pdf',
            producer: document.producer,
            width: file.info.width!,
            height: file.info.height!,
            segments: entry.textLayer,
          },
          sha256: upload.written.sha256,
          filename: filename ? filename.slice(0, 200) : null,
          page: entry.page,
        };
      }
    }
    return pages;
  } catch (error) {
    throw fileRefusal(error, index);
  } finally {
    await local.release();
  }
}

/** A file path holding a temporary's bytes: the object itself on the local store, else a copy. */
async function localCopy(
  blobStore: BlobStore,
  temporaryKey: string,
): Promise<{ path: string; release: () => Promise<void> }> {
  if (blobStore.kind === 'local') {
    return { path: await blobStore.localPath(temporaryKey), release: async () => {} };
  }
  const dir = await mkdtemp(path.join(tmpdir(), 'quire-document-'));
  const file = path.join(dir, 'upload');
  await pipeline(blobStore.read(temporaryKey), createWriteStream(file));
  return { path: file, release: () => rm(dir, { recursive: true, force: true }) };
}
