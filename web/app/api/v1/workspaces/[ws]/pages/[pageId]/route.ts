import { getPage, savePageEdit } from '@quire/db/pages';
import { withTransaction } from '@quire/db/pool';
import { ApiError, json, pathId, type RouteContext, readJson, withApi } from '@quire/web/lib/api';
import { checkSegmentsFit, ifMatchRevision, pageEtag, pageJson } from '@quire/web/lib/pages';
import { pageEditBody } from '@quire/web/lib/schemas';
import { pool } from '@quire/web/lib/server';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

type Params = { ws: string; pageId: string };

const MAX_EDIT_BYTES = 5 * 1024 * 1024;

/** GET /api/v1/workspaces/{ws}/pages/{pageId}: the current revision, with `ETag: "<revision>"`. */
export async function GET(request: Request, context: RouteContext<Params>) {
  return withApi(request, context, async (principal, params) => {
    const page = await getPage(pool(), principal.workspaceId, pathId(params.pageId, 'pageId'));
    if (!page) throw new ApiError(404, 'page_not_found', 'page not found');
    return json(pageJson(page), {
      headers: { ETag: pageEtag(page.revision), 'Cache-Control': 'no-store' },
    });
  });
}

/**
 * PUT /api/v1/workspaces/{ws}/pages/{pageId}: a human edit by compare-and-set. `If-Match` names
 * the revision the editor read; a page that moved on since is a 412 carrying the current
 * revision, and nothing is written.
 */
export async function PUT(request: Request, context: RouteContext<Params>) {
  return withApi(request, context, async (principal, params) => {
    const pageId = pathId(params.pageId, 'pageId');
    const expectedRevision = ifMatchRevision(request.headers.get('if-match'));
    const body = await readJson(request, pageEditBody, MAX_EDIT_BYTES);
    const page = await getPage(pool(), principal.workspaceId, pageId);
    if (!page) throw new ApiError(404, 'page_not_found', 'page not found');
    checkSegmentsFit(page, body.segments);
    const result = await withTransaction(pool(), (client) =>
      savePageEdit(client, {
        workspaceId: principal.workspaceId,
        pageId,
        expectedRevision,
        segments: body.segments,
        language: body.language,
        editedBy: `api-key:${principal.apiKeyId}`,
      }),
    );
    if (result.state === 'missing') throw new ApiError(404, 'page_not_found', 'page not found');
    if (result.state === 'stale') {
      return json(
        {
          error: {
            code: 'stale_revision',
            message: `the page is at revision ${result.revision}, not ${expectedRevision}`,
            currentRevision: result.revision,
          },
        },
        { status: 412, headers: { ETag: pageEtag(result.revision) } },
      );
    }
    const saved = await getPage(pool(), principal.workspaceId, pageId);
    if (!saved) throw new ApiError(404, 'page_not_found', 'page not found');
    return json(pageJson(saved), { headers: { ETag: pageEtag(result.revision) } });
  });
}
