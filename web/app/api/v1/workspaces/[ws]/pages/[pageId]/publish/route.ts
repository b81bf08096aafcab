import { json, pathId, type RouteContext, readJson, withApi } from '@quire/web/lib/api';
import { errorBody, statusOfCode } from '@quire/web/lib/errors';
import { publishBody } from '@quire/web/lib/schemas';
import { publishPage } from '@quire/web/services/pages';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

type Params = { ws: string; pageId: string };

/**
 * POST /api/v1/workspaces/{ws}/pages/{pageId}/publish (E3): in one transaction the public
 * snapshot, the revision-fenced mirror row and the publication event. 409 when the page is not
 * at `expectedRevision`; publishing the revision already public changes nothing.
 */
export async function POST(request: Request, context: RouteContext<Params>) {
  return withApi(request, context, async (principal, params) => {
    const pageId = pathId(params.pageId, 'pageId');
    const { expectedRevision } = await readJson(request, publishBody);
    const result = await publishPage(principal, { pageId, expectedRevision });
    switch (result.state) {
      case 'mismatch':
        return json(
          errorBody(
            'revision_mismatch',
            `the page is at revision ${result.revision}, not ${expectedRevision}`,
            {
              currentRevision: result.revision,
            },
          ),
          { status: statusOfCode('revision_mismatch') },
        );
      case 'unchanged':
        return json({ pageId, publishedRevision: result.revision, eventId: null, changed: false });
      case 'published':
        return json({
          pageId,
          publishedRevision: result.revision,
          eventId: result.eventId,
          changed: true,
        });
    }
  });
}
