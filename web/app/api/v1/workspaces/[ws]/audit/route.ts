import { listAudit } from '@quire/db/auditLog';
import { json, type RouteContext, readQuery, withApi } from '@quire/web/lib/api';
import { auditFilterOf } from '@quire/web/lib/auditFilter';
import { workspaceAuditQuery } from '@quire/web/lib/operatorSchemas';
import { pool } from '@quire/web/lib/server';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

/**
 * GET /api/v1/workspaces/{ws}/audit (M4): this workspace's rows of the audit log (its cancels,
 * re-runs and resumes, and what operators changed on it), newest first; narrowed to a person
 * (`person=account:7` or `apiKey:3`), an `action` and a span of days (`from`, `to`) (R10).
 */
export async function GET(request: Request, context: RouteContext<{ ws: string }>) {
  return withApi(request, context, async ({ workspaceId }) => {
    const query = readQuery(request, workspaceAuditQuery);
    return json(
      await listAudit(pool(), {
        workspaceId,
        beforeId: query.before,
        limit: query.pageSize,
        ...auditFilterOf(query),
      }),
    );
  });
}
