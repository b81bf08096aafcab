import { describe, expect, it } from 'vitest';
import {
  annotationLines,
  imageRequest,
  readManifest,
  scaleSegments,
  textOf,
} from '../../core/interchange/iiifManifest';

/** F8: reading IIIF Presentation 2 and 3 manifests, choosing image sizes, reading text annotations. */
const bytes = (doc: unknown) => new TextEncoder().encode(JSON.stringify(doc));
const codeOf = (run: () => unknown) => {
  try {
    run();
  } catch (error) {
    return (error as { code?: string }).code;
  }
  return undefined;
};
const v3 = (items: unknown[]) => ({
  '@context': 'http://iiif.io/api/presentation/3/context.json',
  id: 'https://example.org/m',
  type: 'Manifest',
  label: { de: ['Brief'], en: ['Letter'] },
  items,
});
const canvas = (n: number) => ({
  id: `https://example.org/c${n}`,
  type: 'Canvas',
  width: 1000,
  height: 2000,
  items: [
    {
      type: 'AnnotationPage',
      items: [
        {
          type: 'Annotation',
          motivation: 'painting',
          body: {
            id: `https://example.org/i${n}.jpg`,
            type: 'Image',
            width: 1000,
            height: 2000,
            service: [
              { id: `https://example.org/iiif/${n}/`, type: 'ImageService3', profile: 'level2' },
            ],
          },
        },
      ],
    },
  ],
});

describe('F8 IIIF manifests', () => {
  it('F8 a Presentation 3 manifest: English label first, canvases in order with their image service', () => {
    const plan = readManifest(bytes(v3([canvas(1), canvas(2)])), { maxCanvases: 10 });
    expect(plan.version).toBe(3);
    expect(plan.label).toBe('Letter');
    expect(plan.canvases.map((c) => [c.id, c.service])).toEqual([
      ['https://example.org/c1', { id: 'https://example.org/iiif/1', version: 3, level: 2 }],
      ['https://example.org/c2', { id: 'https://example.org/iiif/2', version: 3, level: 2 }],
    ]);
  });

  it('F8 what is not a manifest, or has too many canvases, is refused with its code', () => {
    expect(
      codeOf(() => readManifest(new TextEncoder().encode('<html>'), { maxCanvases: 10 })),
    ).toBe('iiif_not_json');
    expect(
      codeOf(() => readManifest(bytes({ type: 'Manifest', items: [] }), { maxCanvases: 10 })),
    ).toBe('iiif_not_manifest');
    expect(codeOf(() => readManifest(bytes(v3([])), { maxCanvases: 10 }))).toBe(
      'iiif_not_manifest',
    );
    expect(codeOf(() => readManifest(bytes(v3([canvas(1), canvas(2)])), { maxCanvases: 1 }))).toBe(
      'iiif_too_many_canvases',
    );
  });

  it('F8 image sizes: whole when it fits, !n,n from level 1-2, a listed size from level 0, none when nothing fits', () => {
    const full = { width: 1000, height: 2000 };
    const level2 = { id: 'https://x/i', version: 3 as const, level: 2 };
    expect(imageRequest(level2, full, 4000)).toEqual({
      url: 'https://x/i/full/max/0/default.jpg',
      ...full,
    });
    expect(imageRequest(level2, full, 1000)).toEqual({
      url: 'https://x/i/full/!1000,1000/0/default.jpg',
      width: 500,
      height: 1000,
    });
    const level0v2 = { id: 'https://x/i', version: 2 as const, level: 0 };
    expect(imageRequest(level0v2, full, 4000)?.url).toBe('https://x/i/full/full/0/default.jpg');
    expect(imageRequest(level0v2, full, 1000)).toBeUndefined();
    expect(
      imageRequest(level0v2, full, 1000, [
        { width: 250, height: 500 },
        { width: 500, height: 1000 },
      ]),
    ).toEqual({ url: 'https://x/i/full/500,/0/default.jpg', width: 500, height: 1000 });
  });

  it('F8 text annotations on regions become lines in the image pixels; comments and whole-canvas notes do not', () => {
    const page = {
      items: [
        {
          motivation: 'supplementing',
          body: { type: 'TextualBody', value: ' first\n line ' },
          target: 'https://example.org/c1#xywh=100,200,300,40',
        },
        {
          motivation: 'commenting',
          body: { type: 'TextualBody', value: 'a note' },
          target: 'https://example.org/c1#xywh=0,0,10,10',
        },
        {
          motivation: 'supplementing',
          body: { type: 'TextualBody', value: 'all' },
          target: 'https://example.org/c1',
        },
        {
          motivation: 'supplementing',
          body: { type: 'TextualBody', value: 'elsewhere' },
          target: 'https://example.org/c2#xywh=0,0,10,10',
        },
      ],
    };
    const lines = annotationLines(
      [page],
      { id: 'https://example.org/c1', width: 1000, height: 2000 },
      {
        width: 500,
        height: 1000,
      },
    );
    expect(lines.map((l) => [l.text, l.target])).toEqual([
      ['first line', { kind: 'xywh', box: { x: 50, y: 100, w: 150, h: 20 } }],
    ]);
    expect(
      scaleSegments(lines, { width: 500, height: 1000 }, { width: 1000, height: 2000 })[0]!.target,
    ).toEqual({
      kind: 'xywh',
      box: { x: 100, y: 200, w: 300, h: 40 },
    });
  });

  it('F8 Presentation 2 labels and values: strings, @value objects and HTML', () => {
    expect(textOf([{ '@value': 'Marx', '@language': 'en' }, 'Engels'], 200)).toBe('Marx; Engels');
    expect(textOf('<b>Public</b> domain', 200)).toBe('Public domain');
    expect(textOf({ none: ['1888'] }, 200)).toBe('1888');
    expect(textOf(undefined, 200)).toBeNull();
  });
});
