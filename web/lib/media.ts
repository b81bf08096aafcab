import { Readable } from 'node:stream';
import type { BlobStore } from '@quire/blobs';

export interface StoredMedia {
  blobKey: string;
  mediaType: string;
  sizeBytes: number | null;
}

/**
 * The answer to GET of a page's image or recording, with byte ranges so a player can seek.
 * Whole or ranged, the body streams from the blob store and reads only what it sends, as the
 * client takes it: an open range such as `bytes=0-` on a long recording holds no more than a
 * stream buffer in memory. One range per request (the first, as players ask); a range that
 * starts past the end is 416 with the size.
 */
export function mediaResponse(
  store: BlobStore,
  media: StoredMedia,
  rangeHeader: string | null,
): Response {
  const headers: Record<string, string> = {
    'Content-Type': media.mediaType,
    'Cache-Control': 'private, max-age=3600',
    'Accept-Ranges': 'bytes',
    'X-Content-Type-Options': 'nosniff',
  };
  const size = media.sizeBytes;
  const match =
    rangeHeader && size !== null ? /^bytes=(\d*)-(\d*)$/.exec(rangeHeader.trim()) : null;
  if (match && size !== null && (match[1] || match[2])) {
    let start = match[1] ? Number(match[1]) : size - Number(match[2]);
    let end = match[1] && match[2] ? Number(match[2]) : size - 1;
    start = Math.max(0, start);
    end = Math.min(size - 1, end);
    if (start > end || start >= size) {
      return new Response(null, {
        status: 416,
        headers: { ...headers, 'Content-Range': `bytes */${size}` },
      });
    }
    return new Response(webStream(store.read(media.blobKey, { start, end })), {
      status: 206,
      headers: {
        ...headers,
        'Content-Range': `bytes ${start}-${end}/${size}`,
        'Content-Length': String(end - start + 1),
      },
    });
  }
  return new Response(webStream(store.read(media.blobKey)), {
    headers: { ...headers, ...(size !== null ? { 'Content-Length': String(size) } : {}) },
  });
}

function webStream(source: Readable): ReadableStream<Uint8Array> {
  return Readable.toWeb(source) as ReadableStream<Uint8Array>;
}
