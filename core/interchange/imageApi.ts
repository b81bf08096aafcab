/**
 * I4: the IIIF Image API 3 at level 2, the pure half. A request's path segments
 * (`{region}/{size}/{rotation}/{quality}.{format}`) become a plan in the image's full-size
 * pixels, or a refusal with a stable code (400: the syntax is wrong, the region lies outside
 * the image, the size is out of bounds); the service's `info.json` and the URIs other modules
 * link to (a page's service, its thumbnail). No I/O: the blob side renders the plan.
 */

import { DomainError, type ErrorCodeOfKind } from '../errors';

export const IMAGE_3_CONTEXT = 'http://iiif.io/api/image/3/context.json';
export const IMAGE_3_MEDIA_TYPE = `application/ld+json;profile="${IMAGE_3_CONTEXT}"`;

/** The tile edge of the pyramidal derivative and of the tiles `info.json` offers. */
export const TILE_SIZE = 256;
/** The largest answer, in pixels, any request may ask for (advertised as `maxArea` when smaller than the image). */
export const MAX_IMAGE_AREA = 100_000_000;
/** The thumbnail a manifest links: at most this many pixels on its longer side. */
export const THUMBNAIL_EDGE = 256;

export const IMAGE_FORMATS = ['jpg', 'png', 'webp'] as const;
export type ImageFormat = (typeof IMAGE_FORMATS)[number];
export const IMAGE_QUALITIES = ['default', 'color', 'gray', 'bitonal'] as const;
export type ImageQuality = (typeof IMAGE_QUALITIES)[number];

export const MEDIA_TYPE_OF_FORMAT: Record<ImageFormat, string> = {
  jpg: 'image/jpeg',
  png: 'image/png',
  webp: 'image/webp',
};

export interface PixelBox {
  x: number;
  y: number;
  w: number;
  h: number;
}

/** What to render: the region of the full image, scaled to width x height, then mirrored and rotated. */
export interface ImagePlan {
  region: PixelBox;
  width: number;
  height: number;
  mirror: boolean;
  rotation: 0 | 90 | 180 | 270;
  quality: ImageQuality;
  format: ImageFormat;
}

export class ImageRequestError extends DomainError {
  override name = 'ImageRequestError';
  constructor(code: ErrorCodeOfKind<'malformed'>, message?: string) {
    super(code, message);
  }
}

export interface ImageRequestSegments {
  region: string;
  size: string;
  rotation: string;
  /** `{quality}.{format}` */
  file: string;
}

const INT = /^\d{1,9}$/;
const NUMBER = /^\d{1,9}(\.\d{1,9})?$|^\.\d{1,9}$/;

function parseRegion(text: string, width: number, height: number): PixelBox {
  if (text === 'full') return { x: 0, y: 0, w: width, h: height };
  if (text === 'square') {
    const side = Math.min(width, height);
    return {
      x: Math.floor((width - side) / 2),
      y: Math.floor((height - side) / 2),
      w: side,
      h: side,
    };
  }
  const pct = text.startsWith('pct:');
  const parts = (pct ? text.slice(4) : text).split(',');
  if (parts.length !== 4 || !parts.every((p) => (pct ? NUMBER : INT).test(p))) {
    throw new ImageRequestError(
      'invalid_region',
      'the region is not full, square, x,y,w,h or pct:x,y,w,h',
    );
  }
  const [a, b, c, d] = parts.map(Number) as [number, number, number, number];
  let box: PixelBox;
  if (pct) {
    if (a > 100 || b > 100 || c > 100 || d > 100) {
      throw new ImageRequestError('invalid_region', 'a region percentage is above 100');
    }
    box = {
      x: Math.round((a / 100) * width),
      y: Math.round((b / 100) * height),
      w: Math.round((c / 100) * width),
      h: Math.round((d / 100) * height),
    };
  } else {
    box = { x: a, y: b, w: c, h: d };
  }
  if (box.w <= 0 || box.h <= 0) {
    throw new ImageRequestError('invalid_region', 'the region has no width or no height');
  }
  if (box.x >= width || box.y >= height) {
    throw new ImageRequestError('region_outside_image', 'the region lies outside the image');
  }
  // A region reaching past the image is cropped to it (Image API 3, 4.1).
  return {
    x: box.x,
    y: box.y,
    w: Math.min(box.w, width - box.x),
    h: Math.min(box.h, height - box.y),
  };
}

/** The size `max` stands for: the region, shrunk (never grown) to fit the area cap. */
function maxSize(region: PixelBox, maxArea: number, upscale: boolean): { w: number; h: number } {
  const area = region.w * region.h;
  if (area <= maxArea && !upscale) return { w: region.w, h: region.h };
  const scale = Math.sqrt(maxArea / area);
  if (!upscale && scale >= 1) return { w: region.w, h: region.h };
  return {
    w: Math.max(1, Math.floor(region.w * scale)),
    h: Math.max(1, Math.floor(region.h * scale)),
  };
}

function parseSize(text: string, region: PixelBox, maxArea: number): { w: number; h: number } {
  const upscale = text.startsWith('^');
  const body = upscale ? text.slice(1) : text;
  const bad = () =>
    new ImageRequestError('invalid_size', 'the size is not max, w,, ,h, pct:n, w,h or !w,h');
  let size: { w: number; h: number };
  if (body === 'max') {
    size = maxSize(region, maxArea, upscale);
  } else if (body.startsWith('pct:')) {
    const pctText = body.slice(4);
    if (!NUMBER.test(pctText)) throw bad();
    const pct = Number(pctText);
    if (pct <= 0) throw new ImageRequestError('invalid_size', 'the size percentage is zero');
    size = {
      w: Math.max(1, Math.round((region.w * pct) / 100)),
      h: Math.max(1, Math.round((region.h * pct) / 100)),
    };
  } else {
    const fit = body.startsWith('!');
    const parts = (fit ? body.slice(1) : body).split(',');
    if (parts.length !== 2) throw bad();
    const [wText, hText] = parts as [string, string];
    if ((wText !== '' && !INT.test(wText)) || (hText !== '' && !INT.test(hText))) throw bad();
    const w = wText === '' ? undefined : Number(wText);
    const h = hText === '' ? undefined : Number(hText);
    if (w === 0 || h === 0)
      throw new ImageRequestError('invalid_size', 'the size has no width or no height');
    if (fit) {
      if (w === undefined || h === undefined) throw bad();
      const scale = Math.min(w / region.w, h / region.h);
      size = {
        w: Math.min(w, Math.max(1, Math.round(region.w * scale))),
        h: Math.min(h, Math.max(1, Math.round(region.h * scale))),
      };
    } else if (w !== undefined && h !== undefined) {
      size = { w, h };
    } else if (w !== undefined) {
      size = { w, h: Math.max(1, Math.round((region.h * w) / region.w)) };
    } else if (h !== undefined) {
      size = { w: Math.max(1, Math.round((region.w * h) / region.h)), h };
    } else {
      throw bad();
    }
  }
  if (!upscale && (size.w > region.w || size.h > region.h)) {
    throw new ImageRequestError(
      'upscale_not_requested',
      'the size is larger than the region; ask with ^ to upscale',
    );
  }
  if (size.w * size.h > maxArea) {
    throw new ImageRequestError('size_too_large', `the answer would exceed ${maxArea} pixels`);
  }
  return size;
}

function parseRotation(text: string): { mirror: boolean; rotation: 0 | 90 | 180 | 270 } {
  const mirror = text.startsWith('!');
  const degrees = mirror ? text.slice(1) : text;
  if (!NUMBER.test(degrees)) {
    throw new ImageRequestError('invalid_rotation', 'the rotation is not a number of degrees');
  }
  const value = Number(degrees);
  if (value > 360) throw new ImageRequestError('invalid_rotation', 'the rotation is above 360');
  const normal = value % 360;
  if (normal !== 0 && normal !== 90 && normal !== 180 && normal !== 270) {
    throw new ImageRequestError(
      'rotation_unsupported',
      'only rotations by multiples of 90 are served',
    );
  }
  return { mirror, rotation: normal };
}

function parseFile(text: string): { quality: ImageQuality; format: ImageFormat } {
  const dot = text.lastIndexOf('.');
  const quality = dot > 0 ? text.slice(0, dot) : '';
  const format = dot > 0 ? text.slice(dot + 1) : '';
  if (!(IMAGE_QUALITIES as readonly string[]).includes(quality)) {
    throw new ImageRequestError(
      'invalid_quality',
      'the quality is not default, color, gray or bitonal',
    );
  }
  if (!(IMAGE_FORMATS as readonly string[]).includes(format)) {
    throw new ImageRequestError('format_unsupported', 'the format is not jpg, png or webp');
  }
  return { quality: quality as ImageQuality, format: format as ImageFormat };
}

/** A request's segments against an image of `width` x `height`: the plan, or an ImageRequestError. */
export function planImageRequest(
  segments: ImageRequestSegments,
  image: { width: number; height: number },
  maxArea: number = MAX_IMAGE_AREA,
): ImagePlan {
  // Checked in the order of the path, so the first wrong segment is the one named.
  const region = parseRegion(segments.region, image.width, image.height);
  const size = parseSize(segments.size, region, maxArea);
  const { mirror, rotation } = parseRotation(segments.rotation);
  const { quality, format } = parseFile(segments.file);
  return { region, width: size.w, height: size.h, mirror, rotation, quality, format };
}

/** How many times a pyramid halves an image until it fits one tile: the levels below full size. */
export function pyramidDepth(width: number, height: number, tile: number = TILE_SIZE): number {
  let depth = 0;
  while (Math.max(width, height) / 2 ** depth > tile) depth++;
  return depth;
}

/** The service's id: `/iiif/{ws}/image/{pageId}` under the public base URL. */
export function imageServiceUriFor(baseUrl: string, workspaceId: number, pageId: number): string {
  return `${baseUrl.replace(/\/$/, '')}/iiif/${workspaceId}/image/${pageId}`;
}

/** The whole page as a JPEG, for viewers that cannot draw the master (TIFF). */
export function fullImageUriFor(serviceUri: string): string {
  return `${serviceUri}/full/max/0/default.jpg`;
}

/** A page's thumbnail: at most THUMBNAIL_EDGE pixels on its longer side, as a JPEG. */
export function thumbnailOf(
  serviceUri: string,
  image: { width: number; height: number },
): { id: string; width: number; height: number } {
  const size = `!${THUMBNAIL_EDGE},${THUMBNAIL_EDGE}`;
  const fits = image.width <= THUMBNAIL_EDGE && image.height <= THUMBNAIL_EDGE;
  const plan = planImageRequest(
    { region: 'full', size: fits ? 'max' : size, rotation: '0', file: 'default.jpg' },
    image,
  );
  return {
    id: `${serviceUri}/full/${fits ? 'max' : size}/0/default.jpg`,
    width: plan.width,
    height: plan.height,
  };
}

/**
 * Everything another view links a page's image by (an item page's thumbnail strip, a viewer):
 * the service, its info.json, the whole page as a JPEG and the thumbnail with its size. The
 * routes apply I1's access rules, so a draft's links answer only its own workspace.
 */
export function pageImageLinks(
  baseUrl: string,
  workspaceId: number,
  pageId: number,
  image: { width: number; height: number },
) {
  const service = imageServiceUriFor(baseUrl, workspaceId, pageId);
  return {
    service,
    info: `${service}/info.json`,
    full: fullImageUriFor(service),
    thumbnail: thumbnailOf(service, image),
  };
}

/** The `service` entry a painting body or thumbnail carries. */
export function imageServiceReference(serviceUri: string) {
  return [{ id: serviceUri, type: 'ImageService3', profile: 'level2' }];
}

/** `info.json` of a page's image service (Image API 3, level 2). */
export function imageInfo(serviceUri: string, image: { width: number; height: number }) {
  const depth = pyramidDepth(image.width, image.height);
  const scaleFactors = Array.from({ length: depth + 1 }, (_, k) => 2 ** k);
  const sizes = scaleFactors
    .slice(1)
    .map((s) => ({
      width: Math.max(1, Math.round(image.width / s)),
      height: Math.max(1, Math.round(image.height / s)),
    }))
    .reverse();
  const capped = image.width * image.height > MAX_IMAGE_AREA;
  return {
    '@context': IMAGE_3_CONTEXT,
    id: serviceUri,
    type: 'ImageService3',
    protocol: 'http://iiif.io/api/image',
    profile: 'level2',
    width: image.width,
    height: image.height,
    ...(capped ? { maxArea: MAX_IMAGE_AREA } : {}),
    sizes,
    tiles: [{ width: TILE_SIZE, height: TILE_SIZE, scaleFactors }],
    extraQualities: ['color', 'gray', 'bitonal'],
    extraFormats: ['png', 'webp'],
    extraFeatures: [
      'mirroring',
      'regionByPct',
      'regionByPx',
      'regionSquare',
      'rotationBy90s',
      'sizeByConfinedWh',
      'sizeByH',
      'sizeByPct',
      'sizeByW',
      'sizeByWh',
      'sizeUpscaling',
    ],
  };
}
