import { Readable } from 'node:stream';
import { pageMedia } from '@quire/db/console';
import { blobStore } from '@quire/web/lib/blobs';
import { pool } from '@quire/web/lib/server';
import { withSession } from '@quire/web/lib/session';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

const notFound = () =>
  Response.json({ error: { code: 'page_not_found', message: 'page not found' } }, { status: 404 });

/**
 * GET /console-api/pages/{pageId}/media: the page's image or recording, for the signed-in
 * editor of the page's workspace only (another workspace's page is a 404). Byte ranges are
 * served so the audio player can seek.
 */
export async function GET(request: Request, { params }: { params: Promise<{ pageId: string }> }) {
  return withSession(request, async (principal) => {
    const { pageId } = await params;
    if (!/^\d{1,15}$/.test(pageId)) return notFound();
    const media = await pageMedia(pool(), principal.workspaceId, Number(pageId));
    if (!media?.blobKey || !media.mediaType) return notFound();
    const headers: Record<string, string> = {
      'Content-Type': media.mediaType,
      'Cache-Control': 'private, max-age=3600',
      'Accept-Ranges': 'bytes',
      'X-Content-Type-Options': 'nosniff',
    };
    const size = media.sizeBytes;
    const range = request.headers.get('range');
    const match = range && size !== null ? /^bytes=(\d*)-(\d*)$/.exec(range.trim()) : null;
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
      const bytes = await blobStore().readRange(media.blobKey, start, end - start + 1);
      return new Response(Buffer.from(bytes), {
        status: 206,
        headers: {
          ...headers,
          'Content-Range': `bytes ${start}-${end}/${size}`,
          'Content-Length': String(bytes.byteLength),
        },
      });
    }
    const stream = Readable.toWeb(blobStore().read(media.blobKey)) as ReadableStream<Uint8Array>;
    return new Response(stream, {
      headers: { ...headers, ...(size !== null ? { 'Content-Length': String(size) } : {}) },
    });
  });
}
