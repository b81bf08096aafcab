import { carriesProvenance } from '@quire/core/exports';
import { getPage } from '@quire/db/pages';
import { ApiError, pathId, type RouteContext, readQuery, withApi } from '@quire/web/lib/api';
import { pageEtag, pageExportResponse, pageProvenance } from '@quire/web/lib/pageHttp';
import { exportQuery } from '@quire/web/lib/schemas';
import { searchablePdfResponse } from '@quire/web/lib/searchablePdf';
import { pool } from '@quire/web/lib/server';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

type Params = { ws: string; pageId: string };

/**
 * GET /api/v1/workspaces/{ws}/pages/{pageId}/export?format=iiif|text|vtt|srt|alto|page|hocr|pdf:
 * the current revision in a format (`pdf`: the searchable PDF of I7). A format that does not fit the page kind (ALTO, PAGE or
 * hOCR for audio, subtitles for images) is a 422.
 */
export async function GET(request: Request, context: RouteContext<Params>) {
  return withApi(request, context, async (principal, params) => {
    const pageId = pathId(params.pageId, 'pageId');
    const { format } = readQuery(request, exportQuery);
    const page = await getPage(pool(), principal.workspaceId, pageId);
    if (!page) throw new ApiError('page_not_found', 'page not found');
    if (format === 'pdf') {
      // I7: the page's image with its current lines as invisible text.
      return searchablePdfResponse([page], {
        filename: `page-${page.id}-r${page.revision}`,
        cacheControl: 'no-store',
        headers: { ETag: pageEtag(page.revision) },
      });
    }
    // An export that does not fit the page's kind is UnsupportedExportError: 422 unsupported_format.
    const provenance = carriesProvenance(format) ? await pageProvenance(pool(), page) : undefined;
    return pageExportResponse(page, format, provenance);
  });
}
