import { json } from '@quire/web/lib/api';
import { withOperator } from '@quire/web/lib/operatorApi';
import { resumeProviderAsOperator } from '@quire/web/services/operator';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

/**
 * POST /api/v1/operator/providers/{name}/resume (M1, Q3): an operator's Resume, which wakes
 * every job waiting on the provider in every workspace; audited (M4).
 */
export async function POST(request: Request, context: { params: Promise<{ name: string }> }) {
  return withOperator(request, context, async (operator, { name }) => {
    const { resumed, woken } = await resumeProviderAsOperator(operator, name);
    return json({ provider: name, resumed, woken });
  });
}
