import { isExportFormat, UnsupportedExportError } from '@quire/core/exports';
import { getPage } from '@quire/db/pages';
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
      return Response.json(
        {
          error: {
            code: 'invalid_query',
            message: 'format: iiif, text, alto, page, hocr, vtt or srt',
          },
        },
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
    try {
      const provenance =
        format === 'alto' || format === 'page' ? await pageProvenance(pool(), page) : undefined;
      return pageExportResponse(page, format, provenance);
    } catch (error) {
      if (error instanceof UnsupportedExportError) {
        return Response.json(
          { error: { code: 'unsupported_format', message: error.message } },
          { status: 422 },
        );
      }
      throw error;
    }
  });
}
