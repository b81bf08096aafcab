import { carriesProvenance, isExportFormat } from '@quire/core/exports';
import { getPage } from '@quire/db/pages';
import { apiError } from '@quire/web/lib/http';
import { pageExportResponse, pageProvenance } from '@quire/web/lib/pageHttp';
import { pool } from '@quire/web/lib/server';
import { withSession } from '@quire/web/lib/session';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

/**
 * GET /console-api/pages/{pageId}/export?format=iiif|text|alto|page|hocr|vtt|srt: the export links of
 * the page view, authorised by the session; the same formats and bodies as the API's export.
 */
export async function GET(request: Request, { params }: { params: Promise<{ pageId: string }> }) {
  return withSession(request, async (principal) => {
    const { pageId } = await params;
    const format = new URL(request.url).searchParams.get('format') ?? '';
    if (format !== 'iiif' && !isExportFormat(format)) {
      return apiError('invalid_query', 'format: iiif, text, alto, page, hocr, vtt or srt');
    }
    const page = /^\d{1,15}$/.test(pageId)
      ? await getPage(pool(), principal.workspaceId, Number(pageId))
      : undefined;
    if (!page) return apiError('page_not_found', 'page not found');
    // An export that does not fit the page's kind is UnsupportedExportError: 422 unsupported_format.
    const provenance = carriesProvenance(format) ? await pageProvenance(pool(), page) : undefined;
    return pageExportResponse(page, format, provenance);
  });
}
