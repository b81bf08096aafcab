import type { Principal } from '@quire/db/workspaces';
import { ApiError, errorResponse, type RouteContext, readQuery } from '@quire/web/lib/api';
import { openEventStream, resumeCursor } from '@quire/web/lib/eventStream';
import { authorize } from '@quire/web/lib/http';
import { eventsQuery } from '@quire/web/lib/schemas';
import { streamCredentialOf } from '@quire/web/lib/streamCredential';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

/**
 * The bearer key, or the console's session cookie (an EventSource cannot send headers). The
 * session must belong to the workspace in the path, else 404 like any foreign id.
 */
async function streamPrincipal(request: Request, ws: string): Promise<Principal | Response> {
  if (request.headers.get('authorization') !== null) {
    const auth = await authorize(request, ws);
    return 'response' in auth ? auth.response : auth.principal;
  }
  let principal: Principal | undefined;
  try {
    const { currentPrincipal } = await import('@quire/web/lib/session');
    principal = await currentPrincipal();
  } catch {
    principal = undefined;
  }
  if (!principal) {
    throw new ApiError('unauthenticated', 'an API key or a console session is required', {
      'WWW-Authenticate': 'Bearer',
    });
  }
  if (String(principal.workspaceId) !== ws)
    throw new ApiError('workspace_not_found', 'workspace not found');
  return principal;
}

/**
 * GET /api/v1/workspaces/{ws}/events (S1): `text/event-stream` of this workspace's outbox
 * events, `id:` = the event's outbox position (D10, commit order); `Last-Event-ID` (or
 * `lastEventId`) resumes strictly after it. The CloudEvent body's `id` is the event's identity.
 */
export async function GET(request: Request, context: RouteContext<{ ws: string }>) {
  try {
    const { ws } = await context.params;
    const principal = await streamPrincipal(request, ws);
    if (principal instanceof Response) return principal;
    const query = readQuery(request, eventsQuery);
    const resumeAfter = resumeCursor(request, query.lastEventId);
    return await openEventStream({
      principal,
      credential: streamCredentialOf(request, principal),
      resumeAfter,
      signal: request.signal,
    });
  } catch (error) {
    return errorResponse(error, request);
  }
}
