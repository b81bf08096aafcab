import { listAudit } from '@quire/db/auditLog';
import { json, readQuery } from '@quire/web/lib/api';
import { auditFilterOf } from '@quire/web/lib/auditFilter';
import { withOperator } from '@quire/web/lib/operatorApi';
import { auditQuery } from '@quire/web/lib/operatorSchemas';
import { pool } from '@quire/web/lib/server';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

/**
 * GET /api/v1/operator/audit (M4): every audit row, newest first; `workspaceId` narrows, and so
 * do a person, an action and a span of days (R10).
 */
export async function GET(request: Request) {
  return withOperator(request, undefined, async () => {
    const query = readQuery(request, auditQuery);
    const page = await listAudit(pool(), {
      workspaceId: query.workspaceId ?? null,
      beforeId: query.before,
      limit: query.pageSize,
      ...auditFilterOf(query),
    });
    return json(page);
  });
}
