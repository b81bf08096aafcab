import { describe, expect, it } from 'vitest';
import { planImageRequest } from '../../core/interchange/imageApi';
import {
  boxOnPage,
  CROP_WIDTH,
  lineCropSources,
  pageImageService,
  pageImageSources,
  pageThumbnail,
} from '../../web/components/pageImage';

/** V7: the console's page images are Image API requests; a line's crop is exactly its box. */
const service = pageImageService(7, 42);
const page = { width: 2745, height: 4445 };

/** The request segments of one of our URLs, as the Image API route reads them. */
function segmentsOf(url: string) {
  const [region, size, rotation, file] = url.slice(service.length + 1).split('/') as [
    string,
    string,
    string,
    string,
  ];
  return { region, size, rotation, file };
}

describe('V7 page images through the Image API', () => {
  it('V7 the service is the same-origin /iiif/{ws}/image/{pageId}', () => {
    expect(service).toBe('/iiif/7/image/42');
  });

  it('V7 a line crop asks for exactly its box, at most CROP_WIDTH wide, 2x for dense screens', () => {
    const crop = lineCropSources(service, { x: 310, y: 2901, w: 2100, h: 64 }, page)!;
    expect(crop.src).toBe(`${service}/310,2901,2100,64/${CROP_WIDTH},/0/default.jpg`);
    expect(crop.srcSet).toBe(`${crop.src} 1x, ${service}/310,2901,2100,64/2100,/0/default.jpg 2x`);
    const plan = planImageRequest(segmentsOf(crop.src), page);
    expect(plan.region).toEqual({ x: 310, y: 2901, w: 2100, h: 64 });
    // The attributes give the size the Image API answers with: no CSS sizing needed.
    expect([crop.width, crop.height]).toEqual([plan.width, plan.height]);
  });

  it('V7 a box in fractions or past the page is cut to whole pixels on the page; none on it, no crop', () => {
    expect(boxOnPage({ x: 2700.4, y: -3, w: 100, h: 20.2 }, page)).toEqual({
      x: 2700,
      y: 0,
      w: 45,
      h: 18,
    });
    const crop = lineCropSources(service, { x: 2700, y: 10, w: 100, h: 20 }, page)!;
    // Never wider than the cut region: a wider size would be an upscale the service refuses.
    expect(() => planImageRequest(segmentsOf(crop.src), page)).not.toThrow();
    expect(crop.srcSet).toBe(`${crop.src} 1x`);
    expect(lineCropSources(service, { x: 3000, y: 10, w: 100, h: 20 }, page)).toBeNull();
  });

  it('V7 the page view offers Image API widths up to the master, and thumbnails fit any size', () => {
    const { src, srcSet } = pageImageSources(service, { width: 1373, height: 2223 });
    expect(src).toBe(`${service}/full/800,/0/default.jpg`);
    expect(srcSet).toBe(
      [480, 800, 1200, 1373].map((w) => `${service}/full/${w},/0/default.jpg ${w}w`).join(', '),
    );
    for (const candidate of srcSet!.split(', ')) {
      const url = candidate.split(' ')[0]!;
      expect(() => planImageRequest(segmentsOf(url), { width: 1373, height: 2223 })).not.toThrow();
    }
    expect(pageImageSources(service, null)).toEqual({ src: `${service}/full/max/0/default.jpg` });
    const thumb = pageThumbnail(service, 256);
    expect(planImageRequest(segmentsOf(thumb), { width: 100, height: 80 })).toMatchObject({
      width: 256,
      height: 205,
    });
  });
});
