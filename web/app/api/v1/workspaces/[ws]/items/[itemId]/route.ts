import { ConflictError, NotFoundError } from '@quire/db/errors';
import { deleteItem } from '@quire/db/items';
import { apiError, authorize } from '@quire/web/lib/http';
import { pool } from '@quire/web/lib/server';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

/**
 * DELETE /api/v1/workspaces/{ws}/items/{itemId} (U3): children first in one transaction,
 * blobs handed to the fenced cleanup; 409 while a job of the item is active.
 */
export async function DELETE(
  request: Request,
  { params }: { params: Promise<{ ws: string; itemId: string }> },
) {
  const { ws, itemId } = await params;
  const auth = await authorize(request, ws);
  if ('response' in auth) return auth.response;
  try {
    const deleted = await deleteItem(
      pool(),
      auth.principal.workspaceId,
      decodeURIComponent(itemId),
    );
    return Response.json(deleted);
  } catch (error) {
    if (error instanceof NotFoundError) return apiError(404, error.code, 'item not found');
    if (error instanceof ConflictError) return apiError(409, error.code, error.message);
    throw error;
  }
}
