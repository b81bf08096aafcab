import { getWorkspace } from '@quire/db/workspaces';
import { apiError, authorize } from '@quire/web/lib/http';
import { pool } from '@quire/web/lib/server';
import { NextResponse } from 'next/server';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

/** GET /api/v1/workspaces/{ws}: the workspace the key belongs to. */
export async function GET(request: Request, { params }: { params: Promise<{ ws: string }> }) {
  const { ws } = await params;
  const auth = await authorize(request, ws);
  if ('response' in auth) return auth.response;
  const workspace = await getWorkspace(pool(), auth.principal.workspaceId);
  if (!workspace) return apiError(404, 'workspace_not_found', 'workspace not found');
  return NextResponse.json({
    workspaceId: workspace.id,
    name: workspace.name,
    createdAt: workspace.createdAt,
  });
}
