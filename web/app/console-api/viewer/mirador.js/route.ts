import { miradorBundle } from '@quire/web/lib/mirador';
import { withSession } from '@quire/web/lib/session';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

/**
 * GET /console-api/viewer/mirador.js (F7): the Mirador build the console's IIIF viewer page
 * loads, from the project's own `node_modules` (web/lib/mirador.ts), for a signed-in person.
 * The script loads under the page's Content-Security-Policy (`'strict-dynamic'`: the viewer's
 * own script adds it); an unchanged bundle answers 304 to its entity tag.
 */
export async function GET(request: Request) {
  return withSession(request, async () => {
    const { bytes, etag } = await miradorBundle();
    const headers = {
      'Content-Type': 'text/javascript; charset=utf-8',
      'Cache-Control': 'private, max-age=86400',
      ETag: etag,
    };
    if (request.headers.get('if-none-match') === etag) {
      return new Response(null, { status: 304, headers });
    }
    return new Response(new Uint8Array(bytes), {
      headers: { ...headers, 'Content-Length': String(bytes.byteLength) },
    });
  });
}
