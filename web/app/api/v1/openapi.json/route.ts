import { openApiDocument } from '@quire/web/lib/openapi';
import { NextResponse } from 'next/server';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

/** GET /api/v1/openapi.json: the OpenAPI 3.1 document, generated from the handlers' schemas. */
export async function GET() {
  return NextResponse.json(openApiDocument(), {
    headers: { 'Cache-Control': 'public, max-age=300' },
  });
}
