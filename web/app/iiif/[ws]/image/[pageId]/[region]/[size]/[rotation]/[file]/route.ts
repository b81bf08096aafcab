import { iiifPreflight } from '@quire/web/lib/iiif';
import { imageRequestResponse } from '@quire/web/lib/iiifImage';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

type Params = {
  ws: string;
  pageId: string;
  region: string;
  size: string;
  rotation: string;
  file: string;
};

/**
 * GET /iiif/{ws}/image/{pageId}/{region}/{size}/{rotation}/{quality}.{format} (I4): the
 * page's image, cut, scaled, turned and encoded; 400 with a stable code for a request the
 * Image API does not allow, 404 for a page the caller may not see.
 */
export async function GET(request: Request, context: { params: Promise<Params> }) {
  const params = await context.params;
  // Next hands path segments still percent-encoded (`pct%3A50`, `%5Emax`).
  const decoded = { ...params };
  for (const name of ['region', 'size', 'rotation', 'file'] as const) {
    try {
      decoded[name] = decodeURIComponent(params[name]);
    } catch {
      decoded[name] = '';
    }
  }
  return imageRequestResponse(request, decoded);
}

export function OPTIONS() {
  return iiifPreflight();
}
