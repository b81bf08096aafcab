import { canvasResponse, iiifPreflight } from '@quire/web/lib/iiif';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

type Params = { ws: string; item: string; pageId: string };

/**
 * GET /iiif/{ws}/{item}/canvas/{pageId} (I1): the canvas URI a page carries, dereferenced:
 * the canvas of the item's manifest, under the same rules as the manifest.
 */
export async function GET(request: Request, context: { params: Promise<Params> }) {
  return canvasResponse(request, await context.params);
}

export function OPTIONS() {
  return iiifPreflight();
}
