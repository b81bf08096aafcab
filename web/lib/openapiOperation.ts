import type { z } from 'zod';

/** One operation of the `/api/v1` document (web/lib/openapi.ts), as each part of the API declares it. */
export type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';
export type JsonSchema = Record<string, unknown>;

export interface Operation {
  method: Method;
  path: string;
  summary: string;
  tag: string;
  query?: z.ZodObject;
  body?: z.ZodType;
  /** A body described by hand (multipart ingest has no zod schema). */
  rawBody?: { mediaType: string; schema: JsonSchema };
  headers?: Array<{ name: string; required: boolean; description: string }>;
  responses: Record<string, { description: string; schema?: z.ZodType; mediaType?: string }>;
  auth?: 'bearer' | 'bearer-or-session' | 'operator' | 'none';
}
