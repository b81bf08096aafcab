import { pathId, type RouteContext, readJson, withApi } from '@quire/web/lib/api';
import { ifMatchRevision, pageEditResponse } from '@quire/web/lib/pageHttp';
import { pageVerifyBody } from '@quire/web/lib/schemas';
import { editPage } from '@quire/web/services/pages';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

type Params = { ws: string; pageId: string };

/**
 * POST /api/v1/workspaces/{ws}/pages/{pageId}/verify: V1, the lines named are `verified` by the
 * caller, as they are in the revision `If-Match` names. V4: landed on top of the current
 * revision when nobody changed those lines since; otherwise a 409 `line_conflict`.
 */
export async function POST(request: Request, context: RouteContext<Params>) {
  return withApi(request, context, async (principal, params) => {
    const pageId = pathId(params.pageId, 'pageId');
    const expectedRevision = ifMatchRevision(request.headers.get('if-match'));
    const body = await readJson(request, pageVerifyBody, 256 * 1024);
    const result = await editPage(principal, {
      pageId,
      expectedRevision,
      edit: { verify: body.lines },
      channel: 'api',
    });
    return pageEditResponse(result, expectedRevision);
  });
}
