import 'server-only';
import { bearerKey } from '@quire/core/apiKeys';
import { bearerOperatorKey } from '@quire/core/operatorKeys';
import { authenticateOperatorKey, type OperatorPrincipal } from '@quire/db/operatorKeys';
import { checkPathParams, errorResponse } from './api';
import { apiError } from './http';
import { pool } from './server';

/**
 * M1: the plumbing of `/api/v1/operator/...`, the installation's routes. Only an operator key
 * (`qo_...`) passes. A workspace key gets 404, exactly as for anything outside its workspace:
 * a workspace learns nothing of installation state from these routes.
 */
export async function withOperator<P = Record<string, never>>(
  request: Request,
  context: { params: Promise<P> } | undefined,
  work: (operator: OperatorPrincipal, params: P) => Promise<Response>,
): Promise<Response> {
  try {
    const header = request.headers.get('authorization');
    const operatorKey = bearerOperatorKey(header);
    if (!operatorKey) {
      if (bearerKey(header)) return apiError('not_found', 'not found');
      return apiError('unauthenticated', 'an operator key is required: Bearer qo_...', {
        'WWW-Authenticate': 'Bearer',
      });
    }
    const operator = await authenticateOperatorKey(pool(), operatorKey);
    if (!operator) {
      return apiError('unauthenticated', 'the operator key is not valid', {
        'WWW-Authenticate': 'Bearer',
      });
    }
    const params = context ? await context.params : ({} as P);
    checkPathParams(params as Record<string, unknown>);
    return await work(operator, params);
  } catch (error) {
    return errorResponse(error, request);
  }
}
