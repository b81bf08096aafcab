import { canvasMediaResponse, iiifPreflight } from '@quire/web/lib/iiif';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

type Params = { ws: string; pageId: string };

/** The media of a page of an item whose id is `collection` (the path `collection/` is taken by F1). */
export async function GET(request: Request, context: { params: Promise<Params> }) {
  return canvasMediaResponse(request, { ...(await context.params), item: 'collection' });
}

export function OPTIONS() {
  return iiifPreflight();
}
