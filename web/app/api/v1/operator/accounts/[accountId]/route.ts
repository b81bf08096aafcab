import { json, pathId, readJson } from '@quire/web/lib/api';
import { withOperator } from '@quire/web/lib/operatorApi';
import { accountBody } from '@quire/web/lib/operatorSchemas';
import { disableAccount } from '@quire/web/services/people';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

type Params = { accountId: string };

/**
 * PATCH /api/v1/operator/accounts/{accountId} (R3): `{disabled: true}` disables the account and
 * ends every session of it at once; `{disabled: false}` enables it again. One audit row names
 * the operator key.
 */
export async function PATCH(request: Request, context: { params: Promise<Params> }) {
  return withOperator(request, context, async (operator, { accountId }) => {
    const id = pathId(accountId, 'accountId');
    const { disabled } = await readJson(request, accountBody);
    return json(await disableAccount(operator, id, disabled));
  });
}
