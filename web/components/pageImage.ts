import { imageServiceUriFor } from '@quire/core/interchange/imageApi';

/**
 * V7 I4: how the console draws a page image: always through the page's own IIIF Image API
 * (`/iiif/{ws}/image/{pageId}`, same origin, so the console's session sees a draft), as JPEGs
 * of the size shown, never the master (a TIFF the browser cannot draw, or megapixels it does
 * not need). A line's crop is an Image API region of exactly its box: nothing is cropped by
 * CSS, so nothing depends on inline styles the Content-Security-Policy refuses.
 */

export interface PixelBox {
  x: number;
  y: number;
  w: number;
  h: number;
}

export interface PixelSize {
  width: number;
  height: number;
}

/** The page view's zooms: the page drawn 1, 2 or 4 times the viewer's width (`?zoom=`). */
export const ZOOMS = [1, 2, 4] as const;
export type Zoom = (typeof ZOOMS)[number];

/** The widths a page view's srcset offers; the browser picks by the size shown. */
const VIEW_WIDTHS = [480, 800, 1200, 1600, 2400, 3200, 4800, 6400];
/** A line's crop is requested at most this wide (twice that for dense screens). */
export const CROP_WIDTH = 1200;

/** The page's Image API service, relative to the console. */
export function pageImageService(workspaceId: number, pageId: number): string {
  return imageServiceUriFor('', workspaceId, pageId);
}

/** The whole page `width` pixels wide; the full size when not known. */
function wholePageAt(service: string, width: number | null): string {
  return `${service}/full/${width === null ? 'max' : `${width},`}/0/default.jpg`;
}

/** The page view's image: a srcset of Image API widths up to the master's own. */
export function pageImageSources(
  service: string,
  size: PixelSize | null,
): { src: string; srcSet?: string } {
  if (!size) return { src: wholePageAt(service, null) };
  const widths = [...VIEW_WIDTHS.filter((w) => w < size.width), size.width];
  return {
    src: wholePageAt(service, widths[Math.min(1, widths.length - 1)]!),
    srcSet: widths.map((w) => `${wholePageAt(service, w)} ${w}w`).join(', '),
  };
}

/** A thumbnail at most `edge` pixels on its longer side, whatever the page's size. */
export function pageThumbnail(service: string, edge: number): string {
  return `${service}/full/^!${edge},${edge}/0/default.jpg`;
}

/**
 * A line's box in whole pixels, cut to the page when its size is known (the Image API crops a
 * region reaching past the image, and a width above the cut region would be an upscale).
 * Null when nothing of the box lies on the page.
 */
export function boxOnPage(box: PixelBox, page: PixelSize | null): PixelBox | null {
  const x = Math.max(0, Math.floor(box.x));
  const y = Math.max(0, Math.floor(box.y));
  const right = Math.min(page?.width ?? Number.POSITIVE_INFINITY, Math.ceil(box.x + box.w));
  const bottom = Math.min(page?.height ?? Number.POSITIVE_INFINITY, Math.ceil(box.y + box.h));
  if (right <= x || bottom <= y) return null;
  return { x, y, w: right - x, h: bottom - y };
}

/** V7: a line's crop, exactly its box of the page, with the size it is drawn at. */
export function lineCropSources(
  service: string,
  box: PixelBox,
  page: PixelSize | null,
): { src: string; srcSet: string; width: number; height: number } | null {
  const region = boxOnPage(box, page);
  if (!region) return null;
  const at = (w: number) =>
    `${service}/${region.x},${region.y},${region.w},${region.h}/${page ? `${w},` : `^${w},`}/0/default.jpg`;
  const width = Math.min(region.w, CROP_WIDTH);
  const dense = Math.min(region.w, CROP_WIDTH * 2);
  return {
    src: at(width),
    srcSet: dense > width ? `${at(width)} 1x, ${at(dense)} 2x` : `${at(width)} 1x`,
    width,
    height: Math.max(1, Math.round((region.h * width) / region.w)),
  };
}
