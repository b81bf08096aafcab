import 'server-only';
import { Readable } from 'node:stream';
import { actorOfLineAuthor } from '@quire/core/actor';
import { bearerKey } from '@quire/core/apiKeys';
import { buildCollection, collectionUriFor } from '@quire/core/interchange/collection';
import { imageServiceUriFor } from '@quire/core/interchange/imageApi';
import { buildManifest, manifestUriFor } from '@quire/core/interchange/manifest';
import { actorNames } from '@quire/db/actors';
import { iiifCollection } from '@quire/db/collections';
import {
  type IiifPageRow,
  type IiifView,
  iiifItemPages,
  iiifPageLocation,
} from '@quire/db/interchange';
import { authenticateApiKey } from '@quire/db/workspaces';
import { ApiError, checkPathParams, errorResponse } from './api';
import { blobStore } from './blobs';
import { searchablePdfResponse } from './searchablePdf';
import { config, pool } from './server';
import { currentPrincipal } from './session';

/**
 * I1: the IIIF resources of an item, under the canvas URIs its pages already carry
 * (`/iiif/{ws}/{item}/...`). Published pages are public (their published snapshot); the
 * workspace's own key or console session sees every page as it stands now. Another
 * workspace's key, or anyone, asking for something not published gets a 404, never a hint.
 * Every answer allows any origin (IIIF viewers run on other sites) without credentials.
 */

export const IIIF_MANIFEST_MEDIA_TYPE =
  'application/ld+json;profile="http://iiif.io/api/presentation/3/context.json"';

export const IIIF_CORS_HEADERS: Record<string, string> = {
  'Access-Control-Allow-Origin': '*',
  'Access-Control-Allow-Methods': 'GET, HEAD, OPTIONS',
  'Access-Control-Allow-Headers': 'Authorization, Accept, Range',
  'Access-Control-Expose-Headers': 'Content-Length, Content-Range, Content-Type',
  'Access-Control-Max-Age': '600',
};

/** The preflight answer of every IIIF route. */
export function iiifPreflight(): Response {
  return new Response(null, { status: 204, headers: IIIF_CORS_HEADERS });
}

function notFound(): never {
  throw new ApiError('not_found', 'no such IIIF resource');
}

/** Which view the caller gets of workspace `wsParam`: `draft` for its own principal. */
export async function iiifViewOf(request: Request, wsParam: string): Promise<IiifView> {
  if (!/^[1-9][0-9]{0,15}$/.test(wsParam)) notFound();
  const workspaceId = Number(wsParam);
  const header = request.headers.get('authorization');
  if (header !== null) {
    const key = bearerKey(header);
    const principal = key ? await authenticateApiKey(pool(), key) : undefined;
    if (!principal) {
      throw new ApiError('unauthenticated', 'the API key is not valid', {
        'WWW-Authenticate': 'Bearer',
      });
    }
    return principal.workspaceId === workspaceId ? 'draft' : 'published';
  }
  const session = await sessionPrincipal();
  return session?.workspaceId === workspaceId ? 'draft' : 'published';
}

/** The console session, when the request came through Next with one; none in other contexts. */
async function sessionPrincipal() {
  try {
    return await currentPrincipal();
  } catch {
    return undefined;
  }
}

export function mediaUrlOf(canvasUri: string): string {
  return `${canvasUri}/media`;
}

function cacheControl(view: IiifView): string {
  return view === 'draft' ? 'private, no-store' : 'public, max-age=60';
}

/** Item ids never hold '%' (ingest/request.ts), so a percent-encoded path segment is decoded. */
function itemIdOf(param: string): string {
  let itemId: string;
  try {
    itemId = param.includes('%') ? decodeURIComponent(param) : param;
  } catch {
    notFound();
  }
  // R6: `%2500` decodes to a NUL here; a 400, not a database error.
  checkPathParams({ item: itemId });
  return itemId;
}

async function itemPages(wsParam: string, itemParam: string, view: IiifView) {
  const itemId = itemIdOf(itemParam);
  if (itemId.length < 1 || itemId.length > 200) notFound();
  const found = await iiifItemPages(pool(), Number(wsParam), itemId, view);
  if (!found) notFound();
  return found;
}

async function manifestOf(view: IiifView, params: { ws: string; item: string }) {
  const { title, metadata, collectionId, pages } = await itemPages(params.ws, params.item, view);
  // R7: the people and keys behind the lines' stamps, by name, looked up once for the item.
  const names = await actorNames(
    pool(),
    pages.flatMap((p) =>
      (p.annotationPage?.items ?? []).flatMap((a) =>
        a['quire:stateBy'] ? [actorOfLineAuthor(a['quire:stateBy'])] : [],
      ),
    ),
  );
  return buildManifest({
    names,
    metadata,
    partOf:
      collectionId === null
        ? null
        : collectionUriFor(config().QUIRE_PUBLIC_URL, Number(params.ws), collectionId),
    manifestUri: manifestUriFor(
      config().QUIRE_PUBLIC_URL,
      Number(params.ws),
      itemIdOf(params.item),
    ),
    itemId: itemIdOf(params.item),
    title,
    pages: pages.map((p) => ({
      position: p.position,
      kind: p.kind,
      canvasUri: p.canvasUri,
      width: p.width,
      height: p.height,
      durationMs: p.durationMs,
      mediaUrl: p.blobKey ? mediaUrlOf(p.canvasUri) : null,
      mediaType: p.mediaType,
      imageServiceUri:
        p.kind === 'image' && p.blobKey
          ? imageServiceUriFor(config().QUIRE_PUBLIC_URL, Number(params.ws), p.id)
          : null,
      annotationPage: p.annotationPage,
    })),
  });
}

function jsonLd(body: unknown, view: IiifView): Response {
  return new Response(JSON.stringify(body), {
    headers: {
      ...IIIF_CORS_HEADERS,
      'Content-Type': IIIF_MANIFEST_MEDIA_TYPE,
      'Cache-Control': cacheControl(view),
      Vary: 'Authorization, Cookie',
    },
  });
}

export async function manifestResponse(
  request: Request,
  params: { ws: string; item: string },
): Promise<Response> {
  try {
    checkPathParams(params);
    const view = await iiifViewOf(request, params.ws);
    return jsonLd(await manifestOf(view, params), view);
  } catch (error) {
    return withCors(errorResponse(error, request));
  }
}

/** A canvas URI dereferenced: the canvas as it stands in the item's manifest, with its context. */
export async function canvasResponse(
  request: Request,
  params: { ws: string; item: string; pageId: string },
): Promise<Response> {
  try {
    checkPathParams(params);
    const view = await iiifViewOf(request, params.ws);
    const location = await pageLocation(params, view);
    const manifest = await manifestOf(view, { ws: params.ws, item: location.itemId });
    const canvas = manifest.items.find((c) => c.id === location.canvasUri);
    if (!canvas) notFound();
    return jsonLd(
      {
        '@context': manifest['@context'],
        ...canvas,
        partOf: [{ id: manifest.id, type: 'Manifest' }],
      },
      view,
    );
  } catch (error) {
    return withCors(errorResponse(error, request));
  }
}

/** I7: the item's searchable PDF, of the pages and revisions this caller's view shows. */
export async function itemPdfResponse(
  request: Request,
  params: { ws: string; item: string },
): Promise<Response> {
  try {
    checkPathParams(params);
    const view = await iiifViewOf(request, params.ws);
    const { title, pages } = await itemPages(params.ws, params.item, view);
    return searchablePdfResponse(pages, {
      filename: `item-${itemIdOf(params.item).replace(/[^A-Za-z0-9._-]/g, '_')}`,
      ...(title ? { title } : {}),
      cacheControl: cacheControl(view),
      headers: { ...IIIF_CORS_HEADERS, Vary: 'Authorization, Cookie' },
    });
  } catch (error) {
    return withCors(errorResponse(error, request));
  }
}

/**
 * F2: a page keeps its canvas URI for good (every revision's annotations target it), and its
 * canvas is served under that id from whichever item holds the page now, so a canvas URI
 * handed out before a move still answers, naming the new item's manifest in `partOf`. A path
 * that is not the page's canvas URI (another item's) is a 404 as before (I1).
 */
async function pageLocation(
  params: { ws: string; item: string; pageId: string },
  view: IiifView,
): Promise<{ itemId: string; canvasUri: string }> {
  if (!/^[1-9][0-9]{0,15}$/.test(params.pageId)) notFound();
  const location = await iiifPageLocation(pool(), Number(params.ws), Number(params.pageId), view);
  if (!location) notFound();
  const asked = `/iiif/${params.ws}/${encodeURIComponent(itemIdOf(params.item))}/canvas/${params.pageId}`;
  if (!location.canvasUri.endsWith(asked)) notFound();
  return location;
}

/** F1: GET /iiif/{ws}/collection/{id}, a IIIF Presentation 3 Collection, as I1 decides access. */
export async function collectionResponse(
  request: Request,
  params: { ws: string; id: string },
): Promise<Response> {
  try {
    const view = await iiifViewOf(request, params.ws);
    if (!/^[1-9][0-9]{0,15}$/.test(params.id)) notFound();
    const found = await iiifCollection(pool(), Number(params.ws), Number(params.id), view);
    if (!found) notFound();
    return jsonLd(
      buildCollection({
        baseUrl: config().QUIRE_PUBLIC_URL,
        workspaceId: Number(params.ws),
        id: found.collection.id,
        title: found.collection.title,
        description: found.collection.description,
        metadata: found.collection.metadata,
        // The public never learns of a parent that shows nothing to them.
        parentId: view === 'draft' ? found.parentId : null,
        collections: found.collections,
        items: found.items,
      }),
      view,
    );
  } catch (error) {
    return withCors(errorResponse(error, request));
  }
}

function withCors(response: Response): Response {
  for (const [name, value] of Object.entries(IIIF_CORS_HEADERS)) response.headers.set(name, value);
  return response;
}

/** The page's image or recording, as its canvas's painting body; byte ranges for seeking. */
export async function canvasMediaResponse(
  request: Request,
  params: { ws: string; item: string; pageId: string },
): Promise<Response> {
  try {
    checkPathParams(params);
    const view = await iiifViewOf(request, params.ws);
    const location = await pageLocation(params, view);
    const { pages } = await itemPages(params.ws, location.itemId, view);
    const page: IiifPageRow | undefined = pages.find((p) => p.id === Number(params.pageId));
    if (!page?.blobKey || !page.mediaType) notFound();
    const headers: Record<string, string> = {
      ...IIIF_CORS_HEADERS,
      'Content-Type': page.mediaType,
      'Cache-Control': view === 'draft' ? 'private, max-age=3600' : 'public, max-age=3600',
      'Accept-Ranges': 'bytes',
      'X-Content-Type-Options': 'nosniff',
      Vary: 'Authorization, Cookie',
    };
    const size = page.sizeBytes;
    const range = request.headers.get('range');
    const match = range && size !== null ? /^bytes=(\d*)-(\d*)$/.exec(range.trim()) : null;
    if (match && size !== null && (match[1] || match[2])) {
      const start = Math.max(0, match[1] ? Number(match[1]) : size - Number(match[2]));
      const end = Math.min(size - 1, match[1] && match[2] ? Number(match[2]) : size - 1);
      if (start > end || start >= size) {
        return new Response(null, {
          status: 416,
          headers: { ...headers, 'Content-Range': `bytes */${size}` },
        });
      }
      const bytes = await blobStore().readRange(page.blobKey, start, end - start + 1);
      return new Response(Buffer.from(bytes), {
        status: 206,
        headers: {
          ...headers,
          'Content-Range': `bytes ${start}-${end}/${size}`,
          'Content-Length': String(bytes.byteLength),
        },
      });
    }
    const stream = Readable.toWeb(blobStore().read(page.blobKey)) as ReadableStream<Uint8Array>;
    return new Response(stream, {
      headers: { ...headers, ...(size !== null ? { 'Content-Length': String(size) } : {}) },
    });
  } catch (error) {
    return withCors(errorResponse(error, request));
  }
}
