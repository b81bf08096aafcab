import { segmentsOf } from '../../../../../../core/annotation';
import { exportPage, isExportFormat, UnsupportedExportError } from '../../../../../../core/exports';
import { getPage } from '../../../../../../db/pages';
import { pool } from '../../../../../lib/server';
import { currentPrincipal } from '../../../../../lib/session';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

const IIIF_MEDIA_TYPE =
  'application/ld+json;profile="http://iiif.io/api/presentation/3/context.json"';

/**
 * GET /console-api/pages/{pageId}/export?format=iiif|text|alto|vtt|srt: the export links of
 * the page view, authorised by the session; the same formats and bodies as the API's export.
 */
export async function GET(request: Request, { params }: { params: Promise<{ pageId: string }> }) {
  const principal = await currentPrincipal();
  if (!principal) {
    return Response.json(
      { error: { code: 'unauthenticated', message: 'sign in first' } },
      { status: 401 },
    );
  }
  const { pageId } = await params;
  const format = new URL(request.url).searchParams.get('format') ?? '';
  if (format !== 'iiif' && !isExportFormat(format)) {
    return Response.json(
      { error: { code: 'invalid_query', message: 'format: iiif, text, alto, vtt or srt' } },
      { status: 400 },
    );
  }
  const page = /^\d{1,15}$/.test(pageId)
    ? await getPage(pool(), principal.workspaceId, Number(pageId))
    : undefined;
  if (!page)
    return Response.json(
      { error: { code: 'page_not_found', message: 'page not found' } },
      { status: 404 },
    );
  const headers = { ETag: `"${page.revision}"`, 'Cache-Control': 'no-store' };
  if (format === 'iiif') {
    return new Response(JSON.stringify(page.annotationPage, null, 2), {
      headers: {
        ...headers,
        'Content-Type': IIIF_MEDIA_TYPE,
        'Content-Disposition': `attachment; filename="page-${page.id}-r${page.revision}.json"`,
      },
    });
  }
  try {
    const result = exportPage(format, {
      canvasUri: page.canvasUri,
      kind: page.kind,
      segments: segmentsOf(page.annotationPage),
      width: page.width ?? undefined,
      height: page.height ?? undefined,
      duration: page.durationMs === null ? undefined : page.durationMs / 1000,
      language: page.annotationPage.items.find((a) => a.body.language)?.body.language,
    });
    return new Response(result.body, {
      headers: {
        ...headers,
        'Content-Type': result.mediaType,
        'Content-Disposition': `attachment; filename="page-${page.id}-r${page.revision}.${result.extension}"`,
      },
    });
  } catch (error) {
    if (error instanceof UnsupportedExportError) {
      return Response.json(
        { error: { code: 'unsupported_format', message: error.message } },
        { status: 422 },
      );
    }
    throw error;
  }
}
