import { json, type RouteContext, readJson, withApi } from '@quire/web/lib/api';
import { iiifImportBody } from '@quire/web/lib/archiveSchemas';
import { importIiif } from '@quire/web/lib/iiifImport';
import { requireAction } from '@quire/web/services/access';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

/**
 * POST /api/v1/workspaces/{ws}/iiif-imports (F8): a IIIF Presentation 2 or 3 manifest URL
 * becomes an item, its canvases pages in order, its transcriptions revision 1 (`imported`).
 * Gated like an upload (`batch.create`).
 */
export async function POST(request: Request, context: RouteContext<{ ws: string }>) {
  return withApi(request, context, async (principal) => {
    requireAction(principal, 'batch.create');
    const body = await readJson(request, iiifImportBody);
    const result = await importIiif(principal, body);
    const itemId = result.pages[0]?.itemId;
    return json(
      { ...result, itemId },
      {
        status: 201,
        headers: { Location: `/api/v1/workspaces/${principal.workspaceId}/items/${itemId}` },
      },
    );
  });
}
