import 'server-only';
import { type RenderSource, renderImage } from '@quire/blobs/imageRender';
import {
  IMAGE_3_MEDIA_TYPE,
  type ImageRequestSegments,
  imageInfo,
  imageServiceUriFor,
  MEDIA_TYPE_OF_FORMAT,
  planImageRequest,
} from '@quire/core/interchange/imageApi';
import { type ImageServicePage, imageServicePage } from '@quire/db/derivatives';
import type { IiifView } from '@quire/db/interchange';
import sharp from 'sharp';
import { ApiError, errorResponse } from './api';
import { blobStore } from './blobs';
import { IIIF_CORS_HEADERS, iiifViewOf } from './iiif';
import { config, pool } from './server';

/**
 * I4: the IIIF Image API 3 (level 2) of every image page, at `/iiif/{ws}/image/{pageId}`,
 * under I1's access rules: published pages are public, the workspace's own key or console
 * session sees every page, anyone else gets a 404; CORS for any origin, without credentials.
 * Answers come from the page's pyramidal derivative once the derivative job has made it, and
 * from the master until then (slower, the same pixels).
 */

function notFound(): never {
  throw new ApiError('not_found', 'no such IIIF resource');
}

function withCors(response: Response): Response {
  for (const [name, value] of Object.entries(IIIF_CORS_HEADERS)) response.headers.set(name, value);
  return response;
}

function headersFor(view: IiifView, contentType: string): Record<string, string> {
  return {
    ...IIIF_CORS_HEADERS,
    'Content-Type': contentType,
    'Cache-Control': view === 'draft' ? 'private, max-age=3600' : 'public, max-age=3600',
    'X-Content-Type-Options': 'nosniff',
    Vary: 'Authorization, Cookie',
  };
}

async function pageFor(
  request: Request,
  params: { ws: string; pageId: string },
): Promise<{ view: IiifView; page: ImageServicePage; width: number; height: number }> {
  const view = await iiifViewOf(request, params.ws);
  if (!/^[1-9][0-9]{0,15}$/.test(params.pageId)) notFound();
  const page = await imageServicePage(pool(), Number(params.ws), Number(params.pageId), view);
  if (!page) notFound();
  if (page.width !== null && page.height !== null) {
    return { view, page, width: page.width, height: page.height };
  }
  // A page whose size ingest could not read: the master's header says it.
  const meta = await sharp(await blobStore().localPath(page.masterKey), { page: 0 }).metadata();
  return { view, page, width: meta.width, height: meta.height };
}

/** The page's service URI, as the manifest and `info.json` name it. */
export function pageImageServiceUri(workspaceId: number, pageId: number): string {
  return imageServiceUriFor(config().QUIRE_PUBLIC_URL, workspaceId, pageId);
}

/** GET `/iiif/{ws}/image/{pageId}`: the base URI redirects to `info.json` (Image API 3, 2.2). */
export async function imageBaseResponse(
  request: Request,
  params: { ws: string; pageId: string },
): Promise<Response> {
  try {
    await pageFor(request, params);
    return new Response(null, {
      status: 303,
      headers: {
        ...IIIF_CORS_HEADERS,
        Location: `${pageImageServiceUri(Number(params.ws), Number(params.pageId))}/info.json`,
      },
    });
  } catch (error) {
    return withCors(errorResponse(error, request));
  }
}

export async function imageInfoResponse(
  request: Request,
  params: { ws: string; pageId: string },
): Promise<Response> {
  try {
    const { view, page, width, height } = await pageFor(request, params);
    const body = imageInfo(pageImageServiceUri(page.workspaceId, page.pageId), { width, height });
    // Image API 3, 6.1: JSON-LD with the Image 3 profile when the client asks for it in Accept,
    // plain JSON otherwise.
    const type = (request.headers.get('accept') ?? '').includes('application/ld+json')
      ? IMAGE_3_MEDIA_TYPE
      : 'application/json';
    return new Response(JSON.stringify(body), {
      headers: {
        ...headersFor(view, type),
        'Cache-Control': view === 'draft' ? 'private, no-store' : 'public, max-age=60',
      },
    });
  } catch (error) {
    return withCors(errorResponse(error, request));
  }
}

export async function imageRequestResponse(
  request: Request,
  params: { ws: string; pageId: string } & ImageRequestSegments,
): Promise<Response> {
  try {
    const { view, page, width, height } = await pageFor(request, params);
    const plan = planImageRequest(params, { width, height });
    const source: RenderSource = page.derivativeKey
      ? {
          path: await blobStore().localPath(page.derivativeKey),
          pyramid: true,
          cacheKey: page.derivativeKey,
        }
      : { path: await blobStore().localPath(page.masterKey), pyramid: false };
    const bytes = await renderImage(source, { width, height }, plan).catch(() => {
      // libvips refused the bytes (a truncated or corrupt master): the same request can never
      // succeed, so a stable refusal rather than a 500. Store outages fail earlier, in localPath.
      throw new ApiError('image_undecodable', "the page's image cannot be decoded");
    });
    return new Response(new Uint8Array(bytes), {
      headers: {
        ...headersFor(view, MEDIA_TYPE_OF_FORMAT[plan.format]),
        'Content-Length': String(bytes.byteLength),
        // Which source answered, for operators and the benchmark: `derivative` or `master`.
        'X-Quire-Image-Source': page.derivativeKey ? 'derivative' : 'master',
      },
    });
  } catch (error) {
    return withCors(errorResponse(error, request));
  }
}
