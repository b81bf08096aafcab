import { describe, expect, it } from 'vitest';
import {
  parsePdfImages,
  parsePdfInfo,
  renderedSize,
  scannedImage,
  textLayerLines,
} from '../../core/interchange/pdfText';
import {
  ImageNotEmbeddable,
  jpegImage,
  pngImage,
  SearchablePdfWriter,
} from '../../core/interchange/searchablePdf';
import { bufferSource, DEFAULT_MEDIA_LIMITS, inspectMedia, tiffFrames } from '../../core/media';
import { jpeg, png, tiff } from '../support/uploadFixtures';

/** A TIFF of several images: each directory after the one before, the last pointing to 0. */
function multiTiff(sizes: Array<[number, number]>, loop = false): Buffer {
  const parts = sizes.map(([w, h]) => tiff(w, h, 0));
  // tiff(w, h, 0): 8-byte header, then the directory (2 + 4 * 12 + 4 bytes).
  const directories = parts.map((p) => Buffer.from(p.subarray(8)));
  const out: Buffer[] = [Buffer.from(parts[0]!.subarray(0, 8))];
  let offset = 8;
  directories.forEach((dir, i) => {
    const next = i + 1 < directories.length ? offset + dir.length : loop ? 8 : 0;
    dir.writeUInt32LE(next, dir.length - 4);
    out.push(dir);
    offset += dir.length;
  });
  return Buffer.concat(out);
}

describe('I5 multi-page TIFF frames from the directory chain', () => {
  it('I5 every frame is listed in order with its size; a single image lists none', async () => {
    const info = await inspectMedia(
      bufferSource(
        multiTiff([
          [10, 20],
          [30, 40],
          [50, 60],
        ]),
      ),
    );
    expect(info).toMatchObject({ mediaType: 'image/tiff', width: 10, height: 20 });
    expect(info.frames).toEqual([
      { width: 10, height: 20 },
      { width: 30, height: 40 },
      { width: 50, height: 60 },
    ]);
    expect((await inspectMedia(bufferSource(tiff(10, 20)))).frames).toBeUndefined();
  });

  it('I5 a chain longer than maxPagesPerFile, a loop, or a frame above the pixel limit is refused', async () => {
    await expect(
      tiffFrames(
        bufferSource(
          multiTiff([
            [1, 1],
            [1, 1],
            [1, 1],
          ]),
        ),
        2,
      ),
    ).rejects.toMatchObject({
      code: 'too_many_pages',
    });
    await expect(
      tiffFrames(
        bufferSource(
          multiTiff(
            [
              [1, 1],
              [1, 1],
            ],
            true,
          ),
        ),
        10,
      ),
    ).rejects.toMatchObject({
      code: 'malformed_media',
    });
    await expect(
      inspectMedia(
        bufferSource(
          multiTiff([
            [10, 10],
            [5000, 5000],
          ]),
        ),
        {
          ...DEFAULT_MEDIA_LIMITS,
          maxPixels: 1_000_000,
        },
      ),
    ).rejects.toMatchObject({ code: 'image_too_large' });
  });
});

describe('I5 what poppler says about a PDF', () => {
  const info = `Producer:        Tesseract 5.3.0
Pages:           2
Encrypted:       no
Page    1 size:  658.8 x 1066.8 pts
Page    1 rot:   0
Page    2 size:  612 x 792 pts (letter)
Page    2 rot:   90
`;
  it('I5 pdfinfo gives the page count, sizes and turns; the rendered size is as pdftoppm rounds it', () => {
    const parsed = parsePdfInfo(info);
    expect(parsed.pages).toBe(2);
    expect(parsed.encrypted).toBe(false);
    expect(renderedSize(parsed.sizes.get(1)!, 300)).toEqual({ width: 2745, height: 4445 });
    // A page turned by 90 degrees is rendered on its side.
    expect(renderedSize(parsed.sizes.get(2)!, 72)).toEqual({ width: 792, height: 612 });
    expect(parsePdfInfo('Pages: 1\nEncrypted: yes (print:no)\n').encrypted).toBe(true);
  });

  it('I9 a page that is one upright scan covering the page is taken at its own pixels; anything else is rendered', () => {
    const list = `page   num  type   width height color comp bpc  enc interp  object ID x-ppi y-ppi size ratio
--------------------------------------------------------------------------------------------
   1     0 image    2745  4445  gray    1   1  image  no        11  0    96    96  127K 8.5%
   2     1 image    1185    43  gray    1   8  jpeg   no        17  0   300   300 9.1K  18%
   3     2 image     600   800  rgb     3   8  jpeg   no        23  0   300   300  50K 3.5%
   3     3 smask     600   800  gray    1   8  image  no        23  0   300   300  10K 2.0%
   4     4 image    2745  4445  gray    1   1  image  no        29  0   300   300 127K 8.5%
`;
    const images = parsePdfImages(list);
    expect(images).toHaveLength(5);
    expect(images[0]).toMatchObject({
      page: 1,
      type: 'image',
      width: 2745,
      height: 4445,
      xPpi: 96,
    });
    const onPage = (page: number) => images.filter((i) => i.page === page);
    const upright = (width: number, height: number) => ({ width, height, rotation: 0 });
    // 2745 px at 96 ppi is 2058.75 pt: the whole page.
    expect(scannedImage(onPage(1), upright(2058.75, 3333.75))?.width).toBe(2745);
    expect(scannedImage(onPage(2), upright(284.4, 10.32))?.encoding).toBe('jpeg');
    // An image with a soft mask, a scan on a larger page (a letter with a small photo), a turned page.
    expect(scannedImage(onPage(3), upright(144, 192))).toBeNull();
    expect(scannedImage(onPage(4), upright(612, 792))).toBeNull();
    expect(scannedImage(onPage(1), { width: 2058.75, height: 3333.75, rotation: 90 })).toBeNull();
    expect(scannedImage([], upright(612, 792))).toBeNull();
  });

  it('I5 text layer words become lines: a new line where a word goes back left or leaves the row; touching words join', () => {
    const word = (x0: number, y0: number, x1: number, y1: number, text: string) =>
      `<word xMin="${x0}" yMin="${y0}" xMax="${x1}" yMax="${y1}">${text}</word>`;
    const raw = `<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.0 Transitional//EN" "http://www.w3.org/TR/xhtml1/DTD/xhtml1-transitional.dtd"><html xmlns="http://www.w3.org/1999/xhtml"><head><title></title></head><body><doc><page width="72" height="144">${[
      word(0, 0, 10, 10, 'One'),
      word(12, 0, 20, 10, 'line'),
      word(20, 0, 22, 10, '?'),
      word(0, 20, 10, 30, 'Next'),
      word(12, 20, 18, 30, '&amp;'),
    ].join('')}</page></doc></body></html>`;
    // 72 x 144 pt rendered at 2 px per pt.
    const lines = textLayerLines(raw, { width: 144, height: 288 });
    expect(lines).toEqual([
      { index: 0, target: { kind: 'xywh', box: { x: 0, y: 0, w: 44, h: 20 } }, text: 'One line?' },
      { index: 1, target: { kind: 'xywh', box: { x: 0, y: 40, w: 36, h: 20 } }, text: 'Next &' },
    ]);
    expect(
      textLayerLines('<html><body><doc><page width="72" height="72"></page></doc></body></html>', {
        width: 1,
        height: 1,
      }),
    ).toEqual([]);
  });
});

describe('I7 the searchable PDF writer', () => {
  it('I7 every xref offset points at its object and the trailer at the xref', () => {
    const writer = new SearchablePdfWriter({ producer: 'Quire', title: 'Brief (1784)' });
    const image = jpegImage(jpeg(40, 30));
    const bytes = Buffer.concat([
      ...writer.begin(),
      ...writer.page({
        image,
        lines: [{ box: { x: 1, y: 1, w: 20, h: 8 }, text: 'Zeile ſ' }],
        dpi: 300,
      }),
      ...writer.page({ image, lines: [], dpi: 300 }),
      ...writer.end(),
    ]);
    const text = bytes.toString('latin1');
    const startxref = Number(/startxref\n(\d+)\n%%EOF\n$/.exec(text)![1]);
    expect(text.slice(startxref, startxref + 4)).toBe('xref');
    const rows = text
      .slice(startxref)
      .split('\n')
      .slice(3)
      .filter((r) => / n $/.test(r));
    rows.forEach((row, i) => {
      const offset = Number(row.slice(0, 10));
      expect(text.slice(offset, offset + `${i + 1} 0 obj`.length)).toBe(`${i + 1} 0 obj`);
    });
    expect(text).toContain('/Count 2');
    // The line's text as the font's codes: Z e i l e space long-s.
    expect(text).toContain('<005a00650069006c00650020017f>');
    expect(text).toContain(' 3 Tr ');
  });

  it('I7 PNGs a PDF cannot carry as they are are refused for conversion; others keep their data', () => {
    const plain = pngImage(png(4, 3));
    expect(plain).toMatchObject({ width: 4, height: 3 });
    expect(plain.entries).toContain('/Predictor 15');
    const withAlpha = png(4, 3);
    withAlpha[25] = 6; // colour type RGBA in IHDR
    expect(() => pngImage(withAlpha)).toThrow(ImageNotEmbeddable);
    const interlaced = png(4, 3);
    interlaced[28] = 1;
    expect(() => pngImage(interlaced)).toThrow(ImageNotEmbeddable);
  });
});
