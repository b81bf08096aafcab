import sharp from 'sharp';
import { MANIFESTO_PAGE } from './fixtures';

/**
 * I4: a TIFF master as archives hold them, made at test time from the real manifesto scan
 * (`test/fixtures/real/manifesto-page-0015.png`, 2745 x 4445): an RGB, LZW-compressed,
 * strip-organised TIFF, scaled by `scale`, with two colour patches laid on the page so a
 * test can tell regions, rotations, mirroring and qualities apart by one pixel.
 */

/** Where the patches are, in the master's pixels at scale 1 (scaled with it). */
export const RED_PATCH = { x: 100, y: 200, w: 300, h: 300 };
export const BLUE_PATCH = { x: 2245, y: 3800, w: 300, h: 300 };

export const MANIFESTO_SIZE = { width: 2745, height: 4445 };

function patch(
  box: { x: number; y: number; w: number; h: number },
  rgb: [number, number, number],
  scale: number,
) {
  const w = Math.round(box.w * scale);
  const h = Math.round(box.h * scale);
  return {
    input: {
      create: {
        width: w,
        height: h,
        channels: 3 as const,
        background: { r: rgb[0], g: rgb[1], b: rgb[2] },
      },
    },
    left: Math.round(box.x * scale),
    top: Math.round(box.y * scale),
  };
}

export async function manifestoTiff(scale = 1): Promise<Buffer> {
  const width = Math.round(MANIFESTO_SIZE.width * scale);
  const height = Math.round(MANIFESTO_SIZE.height * scale);
  return sharp(MANIFESTO_PAGE)
    .resize(width, height, { fit: 'fill', kernel: 'nearest' })
    .toColourspace('srgb')
    .composite([patch(RED_PATCH, [220, 20, 30], scale), patch(BLUE_PATCH, [20, 40, 200], scale)])
    .removeAlpha()
    .tiff({ compression: 'lzw' })
    .toBuffer();
}
