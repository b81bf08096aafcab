import { ingestAndStart } from '@quire/web/lib/ingest';
import { withSession } from '@quire/web/lib/session';
import { requireAction } from '@quire/web/services/access';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

/**
 * POST /console-api/batches: the console's upload (multipart `files[]`), authorised by the
 * session cookie instead of a bearer key, through the same ingest as the API. The cookie is
 * same-site strict, so another site cannot post here as the editor. P8: a person uploading
 * here waits for the pages, so they run ahead of bulk batches (`interactive`).
 */
export async function POST(request: Request) {
  return withSession(request, async (principal) => {
    requireAction(principal, 'batch.create');
    return ingestAndStart(principal, request, 'interactive');
  });
}
