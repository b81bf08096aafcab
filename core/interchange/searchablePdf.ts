/**
 * I7: a searchable PDF, written as a stream of byte chunks one page at a time, so an item of
 * any length is exported with one page's image in memory. Each page is its image, drawn over
 * the whole page, with the page's lines as invisible text (render mode 3) laid over their
 * boxes: a reader shows the scan and finds, selects and copies the text.
 *
 * The text uses one font for every script: a Type 0 font whose two-byte codes are the UTF-16
 * code units of the text, mapped back to Unicode by its ToUnicode CMap. It has no glyphs (none
 * is ever painted); every character is half an em wide and each line is stretched (Tz) to
 * its box. Images are embedded without decoding: JPEG as DCTDecode, PNG as its own zlib data
 * with the PNG predictor (FlateDecode). Pure: the caller reads the images and sends the chunks.
 */

import type { Box } from '../annotation';

/** The pixel size, colour and encoded bytes of a page image a PDF can carry as it is. */
export interface PdfImage {
  width: number;
  height: number;
  /** The image XObject's dictionary entries besides Type, Subtype, Width, Height and Length. */
  entries: string;
  data: Uint8Array;
}

export interface PdfPageInput {
  image: PdfImage;
  /** Lines in reading order, boxes in the image's pixels. */
  lines: ReadonlyArray<{ box: Box; text: string }>;
  /** Pixels per inch the page is laid out at (its size in points is pixels * 72 / dpi). */
  dpi: number;
}

/** The image cannot go into a PDF as it is (interlaced or transparent PNG, TIFF, WebP ...). */
export class ImageNotEmbeddable extends Error {
  override name = 'ImageNotEmbeddable';
}

const encoder = new TextEncoder();
const ascii = (text: string) => encoder.encode(text);

function u32(b: Uint8Array, at: number): number {
  return ((b[at]! << 24) | (b[at + 1]! << 16) | (b[at + 2]! << 8) | b[at + 3]!) >>> 0;
}

/** A PNG's chunks read into an image XObject: its IDAT data is already what FlateDecode reads. */
export function pngImage(png: Uint8Array): PdfImage {
  if (png.length < 33 || png[0] !== 0x89 || png[1] !== 0x50) {
    throw new ImageNotEmbeddable('not a PNG');
  }
  let width = 0;
  let height = 0;
  let depth = 0;
  let colorType = 0;
  let palette: Uint8Array | undefined;
  const idat: Uint8Array[] = [];
  let at = 8;
  while (at + 8 <= png.length) {
    const length = u32(png, at);
    const type = String.fromCharCode(...png.subarray(at + 4, at + 8));
    const body = png.subarray(at + 8, at + 8 + length);
    if (type === 'IHDR') {
      width = u32(body, 0);
      height = u32(body, 4);
      depth = body[8]!;
      colorType = body[9]!;
      if (body[12] !== 0) throw new ImageNotEmbeddable('interlaced PNG');
    } else if (type === 'PLTE') palette = body;
    else if (type === 'IDAT') idat.push(body);
    else if (type === 'IEND') break;
    at += 12 + length;
  }
  const colors = { 0: 1, 2: 3, 3: 1 }[colorType as 0 | 2 | 3];
  if (!colors || !width || !height || idat.length === 0) {
    throw new ImageNotEmbeddable('a PNG with transparency or of an unknown colour type');
  }
  let colorSpace = colors === 3 ? '/DeviceRGB' : '/DeviceGray';
  if (colorType === 3) {
    if (!palette) throw new ImageNotEmbeddable('a palette PNG without its palette');
    const hex = Buffer.from(palette).toString('hex');
    colorSpace = `[/Indexed /DeviceRGB ${palette.length / 3 - 1} <${hex}>]`;
  }
  const data = new Uint8Array(idat.reduce((n, c) => n + c.length, 0));
  let offset = 0;
  for (const chunk of idat) {
    data.set(chunk, offset);
    offset += chunk.length;
  }
  return {
    width,
    height,
    entries: `/ColorSpace ${colorSpace} /BitsPerComponent ${depth} /Filter /FlateDecode /DecodeParms << /Predictor 15 /Colors ${colors} /BitsPerComponent ${depth} /Columns ${width} >>`,
    data,
  };
}

/** A baseline or progressive JPEG as DCTDecode: its frame header gives size and components. */
export function jpegImage(jpeg: Uint8Array): PdfImage {
  let at = 2;
  while (at + 4 <= jpeg.length) {
    if (jpeg[at] !== 0xff) throw new ImageNotEmbeddable('a JPEG marker is missing');
    const marker = jpeg[at + 1]!;
    if (marker === 0xff) {
      at += 1;
      continue;
    }
    if (marker === 0xd8 || (marker >= 0xd0 && marker <= 0xd7) || marker === 0x01) {
      at += 2;
      continue;
    }
    const length = (jpeg[at + 2]! << 8) | jpeg[at + 3]!;
    if ([0xc0, 0xc1, 0xc2].includes(marker)) {
      const depth = jpeg[at + 4]!;
      const height = (jpeg[at + 5]! << 8) | jpeg[at + 6]!;
      const width = (jpeg[at + 7]! << 8) | jpeg[at + 8]!;
      const components = jpeg[at + 9]!;
      const colorSpace = { 1: '/DeviceGray', 3: '/DeviceRGB' }[components as 1 | 3];
      if (!colorSpace || depth !== 8) throw new ImageNotEmbeddable('a CMYK or 12-bit JPEG');
      return {
        width,
        height,
        entries: `/ColorSpace ${colorSpace} /BitsPerComponent 8 /Filter /DCTDecode`,
        data: jpeg,
      };
    }
    if (marker === 0xda || marker === 0xd9) break;
    at += 2 + length;
  }
  throw new ImageNotEmbeddable('a JPEG without a baseline or progressive frame');
}

/** The characters of a line as the font's two-byte codes (UTF-16 code units outside surrogates). */
function codesOf(text: string): string {
  let hex = '';
  for (const char of text) {
    const code = char.codePointAt(0)!;
    // One glyph per character: code points beyond the BMP (rare in transcripts) become U+FFFD.
    const unit = code > 0xffff || (code >= 0xd800 && code <= 0xdfff) ? 0xfffd : code;
    hex += unit.toString(16).padStart(4, '0');
  }
  return hex;
}

function toUnicodeCMap(): string {
  const ranges: string[] = [];
  for (let high = 0; high < 256; high++) {
    if (high >= 0xd8 && high <= 0xdf) continue;
    const h = high.toString(16).padStart(2, '0');
    ranges.push(`<${h}00> <${h}ff> <${h}00>`);
  }
  const blocks: string[] = [];
  for (let i = 0; i < ranges.length; i += 100) {
    const slice = ranges.slice(i, i + 100);
    blocks.push(`${slice.length} beginbfrange\n${slice.join('\n')}\nendbfrange`);
  }
  return [
    '/CIDInit /ProcSet findresource begin',
    '12 dict begin',
    'begincmap',
    '/CIDSystemInfo << /Registry (Adobe) /Ordering (UCS) /Supplement 0 >> def',
    '/CMapName /Quire-UCS def',
    '/CMapType 2 def',
    '1 begincodespacerange',
    '<0000> <ffff>',
    'endcodespacerange',
    ...blocks,
    'endcmap',
    'CMapName currentdict /CMap defineresource pop',
    'end',
    'end',
  ].join('\n');
}

const n = (value: number) => (Math.round(value * 1000) / 1000).toString();

/** The page's drawing: the image over the whole page, then each line as invisible text. */
export function pageContent(page: PdfPageInput): string {
  const scale = 72 / page.dpi;
  const width = page.image.width * scale;
  const height = page.image.height * scale;
  const out = [`q ${n(width)} 0 0 ${n(height)} 0 0 cm /Im0 Do Q`];
  for (const line of page.lines) {
    const text = line.text.replace(/\s+/g, ' ').trim();
    if (text.length === 0 || line.box.w <= 0 || line.box.h <= 0) continue;
    const size = line.box.h * scale;
    const characters = [...text].length;
    // Every character advances half an em; stretching makes the line span its box.
    const stretch = (100 * line.box.w * scale) / (characters * 0.5 * size);
    const x = line.box.x * scale;
    // The font's descent is a fifth of the em, so the baseline sits that far above the box's foot.
    const baseline = height - (line.box.y + line.box.h) * scale + 0.2 * size;
    out.push(
      `BT 3 Tr /F0 ${n(size)} Tf ${n(stretch)} Tz 1 0 0 1 ${n(x)} ${n(baseline)} Tm <${codesOf(text)}> Tj ET`,
    );
  }
  return `${out.join('\n')}\n`;
}

/**
 * Writes a PDF as chunks: `begin()` once, `page()` per page in order, `end()` once. Object
 * offsets are counted as the chunks go, so nothing already written is kept.
 */
export class SearchablePdfWriter {
  private offset = 0;
  private readonly offsets: number[] = [];
  private readonly pageIds: number[] = [];
  private nextId = 1;
  private readonly catalogId = this.allocate();
  private readonly pagesId = this.allocate();
  private readonly fontId = this.allocate();

  constructor(private readonly info: { title?: string; producer: string }) {}

  private allocate(): number {
    return this.nextId++;
  }

  private chunk(bytes: Uint8Array): Uint8Array {
    this.offset += bytes.length;
    return bytes;
  }

  private object(id: number, body: string): Uint8Array {
    this.offsets[id] = this.offset;
    return this.chunk(ascii(`${id} 0 obj\n${body}\nendobj\n`));
  }

  private streamObject(id: number, dictionary: string, data: Uint8Array): Uint8Array[] {
    this.offsets[id] = this.offset;
    return [
      this.chunk(ascii(`${id} 0 obj\n<< ${dictionary} /Length ${data.length} >>\nstream\n`)),
      this.chunk(data),
      this.chunk(ascii('\nendstream\nendobj\n')),
    ];
  }

  begin(): Uint8Array[] {
    const descendantId = this.allocate();
    const descriptorId = this.allocate();
    const cmapId = this.allocate();
    const cmap = ascii(toUnicodeCMap());
    return [
      // The binary comment tells transfer tools the file is not text.
      this.chunk(new Uint8Array([...ascii('%PDF-1.7\n%'), 0xe2, 0xe3, 0xcf, 0xd3, 0x0a])),
      this.object(this.catalogId, `<< /Type /Catalog /Pages ${this.pagesId} 0 R >>`),
      this.object(
        this.fontId,
        `<< /Type /Font /Subtype /Type0 /BaseFont /QuireInvisible /Encoding /Identity-H /DescendantFonts [${descendantId} 0 R] /ToUnicode ${cmapId} 0 R >>`,
      ),
      this.object(
        descendantId,
        `<< /Type /Font /Subtype /CIDFontType2 /BaseFont /QuireInvisible /CIDSystemInfo << /Registry (Adobe) /Ordering (Identity) /Supplement 0 >> /FontDescriptor ${descriptorId} 0 R /DW 500 /CIDToGIDMap /Identity >>`,
      ),
      this.object(
        descriptorId,
        '<< /Type /FontDescriptor /FontName /QuireInvisible /Flags 4 /FontBBox [0 -200 500 800] /ItalicAngle 0 /Ascent 800 /Descent -200 /CapHeight 700 /StemV 80 >>',
      ),
      ...this.streamObject(cmapId, '', cmap),
    ];
  }

  page(page: PdfPageInput): Uint8Array[] {
    const imageId = this.allocate();
    const contentId = this.allocate();
    const pageId = this.allocate();
    this.pageIds.push(pageId);
    const scale = 72 / page.dpi;
    const { image } = page;
    return [
      ...this.streamObject(
        imageId,
        `/Type /XObject /Subtype /Image /Width ${image.width} /Height ${image.height} ${image.entries}`,
        image.data,
      ),
      ...this.streamObject(contentId, '', ascii(pageContent(page))),
      this.object(
        pageId,
        `<< /Type /Page /Parent ${this.pagesId} 0 R /MediaBox [0 0 ${n(image.width * scale)} ${n(image.height * scale)}] /Resources << /XObject << /Im0 ${imageId} 0 R >> /Font << /F0 ${this.fontId} 0 R >> >> /Contents ${contentId} 0 R >>`,
      ),
    ];
  }

  end(): Uint8Array[] {
    const infoId = this.allocate();
    const chunks = [
      this.object(
        this.pagesId,
        `<< /Type /Pages /Kids [${this.pageIds.map((id) => `${id} 0 R`).join(' ')}] /Count ${this.pageIds.length} >>`,
      ),
      this.object(
        infoId,
        `<< /Producer ${pdfString(this.info.producer)}${this.info.title ? ` /Title ${pdfString(this.info.title)}` : ''} >>`,
      ),
    ];
    const xrefAt = this.offset;
    const rows = ['xref', `0 ${this.nextId}`, '0000000000 65535 f '];
    for (let id = 1; id < this.nextId; id++) {
      rows.push(`${String(this.offsets[id] ?? 0).padStart(10, '0')} 00000 n `);
    }
    chunks.push(
      this.chunk(
        ascii(
          `${rows.join('\n')}\ntrailer\n<< /Size ${this.nextId} /Root ${this.catalogId} 0 R /Info ${infoId} 0 R >>\nstartxref\n${xrefAt}\n%%EOF\n`,
        ),
      ),
    );
    return chunks;
  }
}

/** A PDF text string: UTF-16BE with its byte order mark, hex-encoded (no escaping needed). */
function pdfString(text: string): string {
  let hex = 'feff';
  for (let i = 0; i < text.length; i++) hex += text.charCodeAt(i).toString(16).padStart(4, '0');
  return `<${hex}>`;
}
