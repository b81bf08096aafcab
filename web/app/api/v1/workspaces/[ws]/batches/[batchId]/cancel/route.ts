import { NotFoundError } from '@quire/db/errors';
import { apiError, authorize } from '@quire/web/lib/http';
import { quireClient } from '@quire/web/lib/server';
import { NextResponse } from 'next/server';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

/** POST /api/v1/workspaces/{ws}/batches/{batchId}/cancel (J5). */
export async function POST(
  request: Request,
  { params }: { params: Promise<{ ws: string; batchId: string }> },
) {
  const { ws, batchId } = await params;
  const auth = await authorize(request, ws);
  if ('response' in auth) return auth.response;
  try {
    const client = await quireClient();
    const { canceled, releasedPages } = await client.cancelBatch(
      auth.principal.workspaceId,
      batchId,
    );
    return NextResponse.json({
      batchId,
      status: 'canceled',
      canceledJobs: canceled,
      releasedPages,
    });
  } catch (error) {
    if (error instanceof NotFoundError) return apiError(404, error.code, 'batch not found');
    throw error;
  }
}
