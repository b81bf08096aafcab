import { authorize } from '@quire/web/lib/http';
import { ingestAndStart } from '@quire/web/lib/ingest';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

/** POST /api/v1/workspaces/{ws}/batches: multipart ingest (U1-U4), one job per page. */
export async function POST(request: Request, { params }: { params: Promise<{ ws: string }> }) {
  const { ws } = await params;
  const auth = await authorize(request, ws);
  if ('response' in auth) return auth.response;
  return ingestAndStart(auth.principal.workspaceId, request);
}
