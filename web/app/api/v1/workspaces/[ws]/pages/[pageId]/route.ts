import { getPage } from '@quire/db/pages';
import { ApiError, json, pathId, type RouteContext, readJson, withApi } from '@quire/web/lib/api';
import { ifMatchRevision, pageEditResponse, pageEtag, pageJson } from '@quire/web/lib/pageHttp';
import { pageEditBody } from '@quire/web/lib/schemas';
import { pool } from '@quire/web/lib/server';
import { editPage } from '@quire/web/services/pages';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

type Params = { ws: string; pageId: string };

const MAX_EDIT_BYTES = 5 * 1024 * 1024;

/** GET /api/v1/workspaces/{ws}/pages/{pageId}: the current revision, with `ETag: "<revision>"`. */
export async function GET(request: Request, context: RouteContext<Params>) {
  return withApi(request, context, async (principal, params) => {
    const page = await getPage(pool(), principal.workspaceId, pathId(params.pageId, 'pageId'));
    if (!page) throw new ApiError('page_not_found', 'page not found');
    return json(pageJson(page), {
      headers: { ETag: pageEtag(page.revision), 'Cache-Control': 'no-store' },
    });
  });
}

/**
 * PUT /api/v1/workspaces/{ws}/pages/{pageId}: a human edit. `If-Match` names the revision the
 * editor read. V4: when the page moved on since, the lines this edit changed land on top of
 * the current revision if nobody else changed them; a line changed on both sides is a 409
 * `line_conflict` carrying the other text and its author, and nothing is written. An If-Match
 * naming no kept revision is a 412 `stale_revision`. V1: changed lines become `edited`.
 */
export async function PUT(request: Request, context: RouteContext<Params>) {
  return withApi(request, context, async (principal, params) => {
    const pageId = pathId(params.pageId, 'pageId');
    const expectedRevision = ifMatchRevision(request.headers.get('if-match'));
    const body = await readJson(request, pageEditBody, MAX_EDIT_BYTES);
    const result = await editPage(principal, {
      pageId,
      expectedRevision,
      // V1: states are the server's to set; a stamp read back from a GET is not taken.
      edit: { segments: body.segments.map(({ stamp: _, ...s }) => s), language: body.language },
      channel: 'api',
    });
    return pageEditResponse(result, expectedRevision);
  });
}
