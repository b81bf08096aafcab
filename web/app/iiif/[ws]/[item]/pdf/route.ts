import { iiifPreflight, itemPdfResponse } from '@quire/web/lib/iiif';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

type Params = { ws: string; item: string };

/**
 * GET /iiif/{ws}/{item}/pdf (I7): the item's searchable PDF beside its manifest, with the
 * manifest's access: anyone gets the published pages with their published text, the
 * workspace's key or console session every page as it stands; otherwise 404.
 */
export async function GET(request: Request, context: { params: Promise<Params> }) {
  return itemPdfResponse(request, await context.params);
}

export function OPTIONS() {
  return iiifPreflight();
}
