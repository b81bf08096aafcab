import { canvasMediaResponse, iiifPreflight } from '@quire/web/lib/iiif';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

type Params = { ws: string; item: string; pageId: string };

/**
 * GET /iiif/{ws}/{item}/canvas/{pageId}/media (I1): the page's image or recording, the
 * painting body of its canvas, under the same rules as the manifest.
 */
export async function GET(request: Request, context: { params: Promise<Params> }) {
  return canvasMediaResponse(request, await context.params);
}

export function OPTIONS() {
  return iiifPreflight();
}
