import sharp, { type Sharp } from 'sharp';
import type { ImagePlan } from '../core/interchange/imageApi';

/**
 * I4: renders an Image API plan with libvips (sharp). From a page's pyramidal derivative it
 * opens the smallest level that still holds enough pixels and decodes only the tiles under
 * the region; before the derivative exists it reads the master itself (slower: a strip or
 * compressed master may be decoded in full). The levels of a derivative are read once per
 * process: a derivative's key names immutable bytes.
 */

export interface RenderSource {
  path: string;
  /** A pyramidal derivative (levels as pages) or the master (its first frame). */
  pyramid: boolean;
  /** The derivative's key, to remember its levels by; absent for a master. */
  cacheKey?: string;
}

interface Level {
  page: number;
  width: number;
  height: number;
}

const LEVEL_CACHE_ENTRIES = 2_000;
const levelCache = new Map<string, Level[]>();

async function levelsOf(source: RenderSource): Promise<Level[]> {
  const cached = source.cacheKey ? levelCache.get(source.cacheKey) : undefined;
  if (cached) return cached;
  const head = await sharp(source.path, { limitInputPixels: false }).metadata();
  const pages = source.pyramid ? (head.pages ?? 1) : 1;
  const levels: Level[] = [{ page: 0, width: head.width, height: head.height }];
  for (let page = 1; page < pages; page++) {
    const meta = await sharp(source.path, { page, limitInputPixels: false }).metadata();
    levels.push({ page, width: meta.width, height: meta.height });
  }
  if (source.cacheKey) {
    if (levelCache.size >= LEVEL_CACHE_ENTRIES) {
      levelCache.delete(levelCache.keys().next().value as string);
    }
    levelCache.set(source.cacheKey, levels);
  }
  return levels;
}

/** The smallest level whose pixels under the region still cover the answer's size. */
function levelFor(levels: Level[], full: Level, plan: ImagePlan): Level {
  let chosen = levels[0]!;
  for (const level of levels) {
    const rx = level.width / full.width;
    const ry = level.height / full.height;
    // One pixel of slack: levels are floor(half) of the one above.
    if (plan.region.w * rx + 1 >= plan.width && plan.region.h * ry + 1 >= plan.height) {
      if (level.width < chosen.width) chosen = level;
    }
  }
  return chosen;
}

function encode(image: Sharp, plan: ImagePlan): Sharp {
  switch (plan.format) {
    case 'jpg':
      return image.jpeg({ quality: 85 });
    case 'png':
      return image.png({ compressionLevel: 3 });
    case 'webp':
      return image.webp({ quality: 85 });
  }
}

function colour(image: Sharp, plan: ImagePlan): Sharp {
  if (plan.quality === 'gray') return image.grayscale();
  if (plan.quality === 'bitonal') return image.grayscale().threshold(128);
  if (plan.quality === 'color') return image.toColourspace('srgb');
  return image;
}

/** The answer's bytes for `plan` (region in the full image's pixels, as planned against `full`). */
export async function renderImage(
  source: RenderSource,
  full: { width: number; height: number },
  plan: ImagePlan,
): Promise<Buffer> {
  const levels = await levelsOf(source);
  const base = { page: 0, width: full.width, height: full.height };
  const level = levelFor(levels, base, plan);
  const rx = level.width / full.width;
  const ry = level.height / full.height;
  const left = Math.min(level.width - 1, Math.floor(plan.region.x * rx));
  const top = Math.min(level.height - 1, Math.floor(plan.region.y * ry));
  const right = Math.min(
    level.width,
    Math.max(left + 1, Math.ceil((plan.region.x + plan.region.w) * rx)),
  );
  const bottom = Math.min(
    level.height,
    Math.max(top + 1, Math.ceil((plan.region.y + plan.region.h) * ry)),
  );
  let image = sharp(source.path, {
    page: level.page,
    limitInputPixels: false,
    // Tiles are read where the region is, not from the top of the file.
    sequentialRead: !source.pyramid,
  });
  if (!source.pyramid && (await image.metadata()).hasAlpha) {
    image = image.flatten({ background: '#ffffff' });
  }
  image = image.extract({ left, top, width: right - left, height: bottom - top });
  if (right - left !== plan.width || bottom - top !== plan.height) {
    image = image.resize(plan.width, plan.height, { fit: 'fill' });
  }
  // Mirror, then rotate, after scaling (Image API 3, 4.3). sharp orders a pipeline's steps
  // itself: a region cut before the resize is cut first, a flop always precedes the rotation,
  // and a rotation by 90s called after the resize turns the scaled pixels, so one pipeline
  // streams the answer without holding it whole.
  if (plan.mirror) image = image.flop();
  if (plan.rotation !== 0) image = image.rotate(plan.rotation);
  return encode(colour(image, plan), plan).toBuffer();
}
