import { describe, expect, it } from 'vitest';
import {
  ImageRequestError,
  type ImageRequestSegments,
  imageInfo,
  pageImageLinks,
  planImageRequest,
  pyramidDepth,
  thumbnailOf,
} from '../../core/interchange/imageApi';

/** I4: the Image API's request grammar and sizes, pure: what each path asks for, in pixels. */

const IMAGE = { width: 2745, height: 4445 };

function plan(path: string, image = IMAGE) {
  const [region, size, rotation, file] = path.split('/') as [string, string, string, string];
  return planImageRequest({ region, size, rotation, file } satisfies ImageRequestSegments, image);
}

function refusal(path: string): string {
  try {
    plan(path);
  } catch (error) {
    expect(error).toBeInstanceOf(ImageRequestError);
    expect((error as ImageRequestError).kind).toBe('malformed');
    return (error as ImageRequestError).code;
  }
  throw new Error(`${path} was not refused`);
}

describe('I4 Image API request grammar', () => {
  it('I4 regions: full, square, pixels (cropped to the image) and percentages', () => {
    expect(plan('full/max/0/default.jpg').region).toEqual({ x: 0, y: 0, w: 2745, h: 4445 });
    expect(plan('square/max/0/default.jpg').region).toEqual({ x: 0, y: 850, w: 2745, h: 2745 });
    expect(plan('2600,4400,500,500/max/0/default.jpg').region).toEqual({
      x: 2600,
      y: 4400,
      w: 145,
      h: 45,
    });
    expect(plan('pct:50,50,50,50/max/0/default.jpg').region).toEqual({
      x: 1373,
      y: 2223,
      w: 1372,
      h: 2222,
    });
    expect(refusal('2745,0,10,10/max/0/default.jpg')).toBe('region_outside_image');
    expect(refusal('-1,0,10,10/max/0/default.jpg')).toBe('invalid_region');
    expect(refusal('1.5,0,10,10/max/0/default.jpg')).toBe('invalid_region');
  });

  it('I4 sizes: max, w,, ,h, pct:, w,h, !w,h and ^ upscaling, bounded', () => {
    const region = '0,0,1000,500';
    const size = (s: string) => {
      const p = plan(`${region}/${s}/0/default.jpg`);
      return [p.width, p.height];
    };
    expect(size('max')).toEqual([1000, 500]);
    expect(size('500,')).toEqual([500, 250]);
    expect(size(',100')).toEqual([200, 100]);
    expect(size('pct:25')).toEqual([250, 125]);
    expect(size('300,300')).toEqual([300, 300]);
    expect(size('!300,300')).toEqual([300, 150]);
    expect(size('^2000,')).toEqual([2000, 1000]);
    expect(size('^!3000,3000')).toEqual([3000, 1500]);
    expect(size('^pct:150')).toEqual([1500, 750]);
    expect(size('^max')).toEqual(
      [1000, 500].map((n) => Math.floor(n * Math.sqrt(100_000_000 / 500_000))),
    );
    expect(refusal(`${region}/1001,/0/default.jpg`)).toBe('upscale_not_requested');
    expect(refusal(`${region}/pct:101/0/default.jpg`)).toBe('upscale_not_requested');
    expect(refusal(`${region}/,/0/default.jpg`)).toBe('invalid_size');
    expect(refusal(`${region}/!300,/0/default.jpg`)).toBe('invalid_size');
    expect(refusal(`${region}/pct:0/0/default.jpg`)).toBe('invalid_size');
    expect(refusal('full/^100000,/0/default.jpg')).toBe('size_too_large');
  });

  it('I4 max shrinks an image above the area cap to fit it, and info.json says so', () => {
    const huge = { width: 20_000, height: 10_000 };
    const p = plan('full/max/0/default.jpg', huge);
    expect(p.width * p.height).toBeLessThanOrEqual(100_000_000);
    expect(p.width / p.height).toBeCloseTo(2, 2);
    expect(imageInfo('https://q/iiif/1/image/2', huge).maxArea).toBe(100_000_000);
    expect(imageInfo('https://q/iiif/1/image/2', IMAGE).maxArea).toBeUndefined();
  });

  it('I4 rotation by 90s with mirroring, qualities and formats', () => {
    expect(plan('full/max/90/default.jpg')).toMatchObject({ rotation: 90, mirror: false });
    expect(plan('full/max/!270/gray.png')).toMatchObject({
      rotation: 270,
      mirror: true,
      quality: 'gray',
      format: 'png',
    });
    expect(plan('full/max/360/bitonal.webp')).toMatchObject({ rotation: 0, quality: 'bitonal' });
    expect(plan('full/max/180.0/color.jpg')).toMatchObject({ rotation: 180, quality: 'color' });
    expect(refusal('full/max/45/default.jpg')).toBe('rotation_unsupported');
    expect(refusal('full/max/361/default.jpg')).toBe('invalid_rotation');
    expect(refusal('full/max/0/sepia.jpg')).toBe('invalid_quality');
    expect(refusal('full/max/0/default.gif')).toBe('format_unsupported');
    // The first wrong segment is the one named.
    expect(refusal('nope/nope/nope/nope')).toBe('invalid_region');
  });

  it('I4 info.json tiles reach one tile at the top scale factor; thumbnails fit 256', () => {
    expect(pyramidDepth(2745, 4445)).toBe(5);
    expect(pyramidDepth(256, 100)).toBe(0);
    const info = imageInfo('https://q/iiif/1/image/2', { width: 256, height: 100 });
    expect(info.tiles).toEqual([{ width: 256, height: 256, scaleFactors: [1] }]);
    expect(info.sizes).toEqual([]);
    expect(thumbnailOf('https://q/s', IMAGE)).toEqual({
      id: 'https://q/s/full/!256,256/0/default.jpg',
      width: 158,
      height: 256,
    });
    expect(thumbnailOf('https://q/s', { width: 40, height: 30 })).toEqual({
      id: 'https://q/s/full/max/0/default.jpg',
      width: 40,
      height: 30,
    });
  });

  it('I4 a page links its service, info.json, full JPEG and thumbnail under the public URL', () => {
    expect(pageImageLinks('https://quire.example/', 3, 41, IMAGE)).toEqual({
      service: 'https://quire.example/iiif/3/image/41',
      info: 'https://quire.example/iiif/3/image/41/info.json',
      full: 'https://quire.example/iiif/3/image/41/full/max/0/default.jpg',
      thumbnail: {
        id: 'https://quire.example/iiif/3/image/41/full/!256,256/0/default.jpg',
        width: 158,
        height: 256,
      },
    });
  });
});
