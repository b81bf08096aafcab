import { pageMedia } from '@quire/db/console';
import { blobStore } from '@quire/web/lib/blobs';
import { apiError } from '@quire/web/lib/http';
import { mediaResponse } from '@quire/web/lib/media';
import { pool } from '@quire/web/lib/server';
import { withSession } from '@quire/web/lib/session';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

const notFound = () => apiError('page_not_found', 'page not found');

/**
 * GET /console-api/pages/{pageId}/media: the page's image or recording, for the signed-in
 * editor of the page's workspace only (another workspace's page is a 404). Byte ranges are
 * served, streamed, so the audio player can seek (web/lib/media.ts).
 */
export async function GET(request: Request, { params }: { params: Promise<{ pageId: string }> }) {
  return withSession(request, async (principal) => {
    const { pageId } = await params;
    if (!/^\d{1,15}$/.test(pageId)) return notFound();
    const media = await pageMedia(pool(), principal.workspaceId, Number(pageId));
    if (!media?.blobKey || !media.mediaType) return notFound();
    return mediaResponse(
      blobStore(),
      { blobKey: media.blobKey, mediaType: media.mediaType, sizeBytes: media.sizeBytes },
      request.headers.get('range'),
    );
  });
}
