import 'server-only';
import { bearerKey } from '@quire/core/apiKeys';
import type { ErrorCode } from '@quire/core/errors';
import { authenticateApiKey, type Principal } from '@quire/db/workspaces';
import { NextResponse } from 'next/server';
import { errorBody, type HttpError, statusOfCode } from './errors';
import { pool } from './server';

/** JSON errors with a stable code (SPEC §7). */
export function apiError(code: ErrorCode, message?: string, headers?: HeadersInit): NextResponse {
  return NextResponse.json(errorBody(code, message), { status: statusOfCode(code), headers });
}

/** The answer to a refusal that web/lib/errors.ts knows. */
export function refusalResponse(refused: HttpError): NextResponse {
  return NextResponse.json(refused.body, { status: refused.status, headers: refused.headers });
}

/**
 * Authenticates the bearer key and scopes the call to the workspace in the path. Another
 * workspace's id is a 404, not a 403: a key learns nothing about other workspaces.
 */
export async function authorize(
  request: Request,
  workspaceParam: string,
): Promise<{ principal: Principal } | { response: NextResponse }> {
  const key = bearerKey(request.headers.get('authorization'));
  if (!key) {
    return {
      response: apiError('unauthenticated', 'an API key is required: Authorization: Bearer <key>', {
        'WWW-Authenticate': 'Bearer',
      }),
    };
  }
  const principal = await authenticateApiKey(pool(), key);
  if (!principal) {
    return {
      response: apiError('unauthenticated', 'the API key is not valid', {
        'WWW-Authenticate': 'Bearer',
      }),
    };
  }
  const workspaceId = Number(workspaceParam);
  if (
    !Number.isSafeInteger(workspaceId) ||
    workspaceId <= 0 ||
    workspaceId !== principal.workspaceId
  ) {
    return { response: apiError('workspace_not_found', 'workspace not found') };
  }
  return { principal };
}
