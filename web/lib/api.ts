import 'server-only';
import { jsonTooDeep, MAX_JSON_DEPTH } from '@quire/core/jsonDepth';
import { redactError } from '@quire/core/redact';
import { assertAcceptedText, describeTextFault, textFault } from '@quire/core/text';
import type { Principal } from '@quire/db/workspaces';
import { discardRest } from '@quire/ingest/requestBody';
import { NextResponse } from 'next/server';
import type { z } from 'zod';
import { ApiError, httpErrorOf } from './errors';
import { apiError, authorize, refusalResponse } from './http';

export { ApiError };

/**
 * The plumbing every `/api/v1` handler shares: authentication and workspace scope, bounded
 * JSON bodies and query strings validated by the zod schemas of web/lib/schemas.ts, and typed
 * errors answered through web/lib/errors.ts. Validation runs before any write, so a rejected
 * request changes nothing.
 */

export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;

export type RouteContext<P> = { params: Promise<P> };

/** Runs a handler for an authenticated principal of the workspace in the path. */
export async function withApi<P extends { ws: string }>(
  request: Request,
  context: RouteContext<P>,
  work: (principal: Principal, params: P) => Promise<Response>,
): Promise<Response> {
  try {
    const params = await context.params;
    checkPathParams(params);
    const auth = await authorize(request, params.ws);
    if ('response' in auth) return auth.response;
    return await work(auth.principal, params);
  } catch (error) {
    return errorResponse(error, request);
  }
}

/**
 * R6: every path parameter is text PostgreSQL can hold: a NUL or a lone surrogate (`%00`,
 * `%ED%A0%80` in the URL) is a 400 `invalid_path` before any route reads it.
 */
export function checkPathParams(params: Record<string, unknown>): void {
  for (const [name, value] of Object.entries(params)) {
    if (typeof value !== 'string') continue;
    const fault = textFault(value);
    if (fault) throw new ApiError('invalid_path', `${name} ${describeTextFault(fault)}`);
  }
}

/** A path parameter Next has decoded once, decoded once more where a route expects that. */
export function decodedPathParam(value: string, name: string): string {
  let decoded: string;
  try {
    decoded = decodeURIComponent(value);
  } catch {
    throw new ApiError('invalid_path', `${name} is not valid percent-encoding`);
  }
  checkPathParams({ [name]: decoded });
  return decoded;
}

export function errorResponse(error: unknown, request?: Request): NextResponse {
  const refused = httpErrorOf(error);
  if (refused) {
    // R6: a refused input is logged by its code and route; never the input itself.
    if (refused.status === 400 || refused.status === 413 || refused.status === 422) {
      console.warn(
        JSON.stringify({
          level: 'warn',
          service: 'quire-web',
          msg: 'request refused',
          method: request?.method,
          path: request ? new URL(request.url).pathname : undefined,
          status: refused.status,
          code: refused.body.error.code,
        }),
      );
    }
    return refusalResponse(refused);
  }
  // O2: the log names the route and a redacted error; never a body, header or key.
  console.error(
    JSON.stringify({
      level: 'error',
      service: 'quire-web',
      msg: 'request failed',
      method: request?.method,
      path: request ? new URL(request.url).pathname : undefined,
      error: redactError(error),
    }),
  );
  return apiError('internal', 'the request could not be completed');
}

function describeIssues(error: z.ZodError): string {
  // Paths and messages only: zod's messages do not echo the rejected values (secrets stay out).
  const text = error.issues
    .slice(0, 5)
    .map((i) => `${i.path.length > 0 ? i.path.join('.') : 'body'}: ${i.message}`)
    .join('; ');
  return text.length > 500 ? `${text.slice(0, 500)}…` : text;
}

function isJsonMediaType(header: string | null): boolean {
  const mediaType = (header ?? '').split(';')[0]!.trim().toLowerCase();
  return mediaType === 'application/json' || /^application\/[a-z0-9.-]+\+json$/.test(mediaType);
}

/** Reads at most `maxBytes` of the body; 413 beyond, whatever Content-Length claimed. */
export async function readBodyBytes(request: Request, maxBytes: number): Promise<Uint8Array> {
  const declared = request.headers.get('content-length');
  if (declared !== null && Number(declared) > maxBytes) {
    if (request.body) discardRest(request.body);
    throw new ApiError('payload_too_large', `the body must be at most ${maxBytes} bytes`);
  }
  if (!request.body) return new Uint8Array();
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > maxBytes) {
      // Read to the end, never cancelled: see ingest/requestBody.ts (R6).
      discardRest(reader);
      throw new ApiError('payload_too_large', `the body must be at most ${maxBytes} bytes`);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks);
}

/** 415 for another media type, 413 when too large, 400 for bad JSON or a shape the schema rejects. */
export async function readJson<S extends z.ZodType>(
  request: Request,
  schema: S,
  maxBytes = DEFAULT_MAX_BODY_BYTES,
): Promise<z.output<S>> {
  if (!isJsonMediaType(request.headers.get('content-type'))) {
    throw new ApiError('unsupported_media_type', 'the body must be application/json');
  }
  const bytes = await readBodyBytes(request, maxBytes);
  let value: unknown;
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw new ApiError('malformed_json', 'the body is not valid JSON');
  }
  if (jsonTooDeep(text)) {
    throw new ApiError('json_too_deep', `JSON may nest at most ${MAX_JSON_DEPTH} levels`);
  }
  try {
    value = JSON.parse(text);
  } catch {
    throw new ApiError('malformed_json', 'the body is not valid JSON');
  }
  // R6: before the schema, so no field of any route lets a NUL or lone surrogate through.
  assertAcceptedText(value);
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw new ApiError('invalid_request', describeIssues(parsed.error));
  return parsed.data;
}

/** Query parameters; a repeated parameter is a 400, unknown ones are ignored. */
export function readQuery<S extends z.ZodType>(request: Request, schema: S): z.output<S> {
  const params = new URL(request.url).searchParams;
  const object: Record<string, string> = {};
  for (const [key, value] of params) {
    if (key in object) throw new ApiError('invalid_query', `${key}: given more than once`);
    const fault = textFault(key) ?? textFault(value);
    if (fault) {
      const name = /^[A-Za-z0-9_-]{1,40}$/.test(key) ? key : 'a parameter';
      throw new ApiError('invalid_query', `${name} ${describeTextFault(fault)}`);
    }
    object[key] = value;
  }
  const parsed = schema.safeParse(object);
  if (!parsed.success) throw new ApiError('invalid_query', describeIssues(parsed.error));
  return parsed.data;
}

/** A positive integer path id; anything else is a 400 (a well-formed foreign id is a 404 later). */
export function pathId(value: string, name: string): number {
  if (!/^[1-9][0-9]{0,15}$/.test(value) || !Number.isSafeInteger(Number(value))) {
    throw new ApiError('invalid_path', `${name} must be a positive integer`);
  }
  return Number(value);
}

export function json(body: unknown, init?: ResponseInit): NextResponse {
  return NextResponse.json(body, init);
}
