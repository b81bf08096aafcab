import { segmentsOf } from '../../../../../../../../../core/annotation';
import { exportPage, UnsupportedExportError } from '../../../../../../../../../core/exports';
import { getPage } from '../../../../../../../../../db/pages';
import {
  ApiError,
  pathId,
  type RouteContext,
  readQuery,
  withApi,
} from '../../../../../../../../lib/api';
import { pageLanguage } from '../../../../../../../../lib/pages';
import { exportQuery } from '../../../../../../../../lib/schemas';
import { pool } from '../../../../../../../../lib/server';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

type Params = { ws: string; pageId: string };

const IIIF_MEDIA_TYPE =
  'application/ld+json;profile="http://iiif.io/api/presentation/3/context.json"';

/**
 * GET /api/v1/workspaces/{ws}/pages/{pageId}/export?format=iiif|text|vtt|srt|alto: the current
 * revision in a format. A format that does not fit the page kind (ALTO for audio, subtitles
 * for images) is a 422.
 */
export async function GET(request: Request, context: RouteContext<Params>) {
  return withApi(request, context, async (principal, params) => {
    const pageId = pathId(params.pageId, 'pageId');
    const { format } = readQuery(request, exportQuery);
    const page = await getPage(pool(), principal.workspaceId, pageId);
    if (!page) throw new ApiError(404, 'page_not_found', 'page not found');
    const headers = { ETag: `"${page.revision}"`, 'Cache-Control': 'no-store' };
    if (format === 'iiif') {
      return new Response(JSON.stringify(page.annotationPage), {
        headers: { ...headers, 'Content-Type': IIIF_MEDIA_TYPE },
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
        language: pageLanguage(page.annotationPage),
      });
      return new Response(result.body, {
        headers: {
          ...headers,
          'Content-Type': result.mediaType,
          'Content-Disposition': `attachment; filename="page-${page.id}-r${page.revision}.${result.extension}"`,
        },
      });
    } catch (error) {
      if (error instanceof UnsupportedExportError)
        throw new ApiError(422, 'unsupported_format', error.message);
      throw error;
    }
  });
}
