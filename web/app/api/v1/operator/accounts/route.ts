import { json, readQuery } from '@quire/web/lib/api';
import { withOperator } from '@quire/web/lib/operatorApi';
import { accountsQuery } from '@quire/web/lib/operatorSchemas';
import { listInstallationAccounts } from '@quire/web/services/people';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

/**
 * GET /api/v1/operator/accounts (R3): the installation's accounts with their workspaces and
 * roles, by page, optionally searched by email or name.
 */
export async function GET(request: Request) {
  return withOperator(request, undefined, async (operator) => {
    const query = readQuery(request, accountsQuery);
    return json(
      await listInstallationAccounts(operator, { search: query.q, afterId: query.after }),
    );
  });
}
