import { readFileSync } from 'node:fs';
import { XMLParser } from 'fast-xml-parser';
import { describe, expect, it } from 'vitest';
import type { Segment } from '../../core/annotation';
import { exportPage } from '../../core/exports';
import { UnsupportedExportError } from '../../core/interchange/exportInput';
import { HOCR_CAPABILITIES, toHocr } from '../../core/interchange/hocr';
import { toPageXml } from '../../core/interchange/pageXml';
import { parseTranscript, TranscriptRejection } from '../../core/interchange/transcriptImport';
import { KANT, pageSchemaErrors, parseWithLibxml2 } from '../support/interchange';

const canvasUri = 'https://quire.example/iiif/7/item%20a%26b/canvas/12';

const lines: Segment[] = [
  {
    index: 1,
    target: { kind: 'xywh', box: { x: 40, y: 120, w: 900, h: 48 } },
    text: 'second <line> & "quotes"',
  },
  {
    index: 0,
    target: { kind: 'xywh', box: { x: 40, y: 60, w: 910.6, h: 50 } },
    text: 'Firſt line',
    confidence: 0.93,
  },
  { index: 2, target: { kind: 'xywh', box: { x: 30, y: 190, w: 2000, h: 40 } }, text: '' },
];
const input = {
  canvasUri,
  kind: 'image' as const,
  segments: lines,
  width: 1000,
  height: 800,
  language: 'de',
};

/** The page's lines as the exports must carry them: reading order, boxes clamped to the page. */
const expected = [
  { id: 'line_0', box: { x: 40, y: 60, w: 911, h: 50 }, text: 'Firſt line' },
  { id: 'line_1', box: { x: 40, y: 120, w: 900, h: 48 }, text: 'second <line> & "quotes"' },
  { id: 'line_2', box: { x: 30, y: 190, w: 970, h: 40 }, text: '' },
];

function pointsOf(box: { x: number; y: number; w: number; h: number }): string {
  const r = box.x + box.w;
  const b = box.y + box.h;
  return `${box.x},${box.y} ${r},${box.y} ${r},${b} ${box.x},${b}`;
}

describe('I2 PAGE XML export', () => {
  it('I2 PAGE export is valid against the PAGE 2019-07-15 XSD (libxml2)', () => {
    const xml = toPageXml(input);
    expect(pageSchemaErrors(xml)).toEqual([]);
    // An empty page is valid too (no region, no reading order).
    expect(pageSchemaErrors(toPageXml({ ...input, segments: [] }))).toEqual([]);
  });

  it('I2 the XSD check is real: a PAGE file missing a required attribute fails it', () => {
    const broken = toPageXml(input).replace(/ imageWidth="1000"/, '');
    expect(pageSchemaErrors(broken).join('\n')).toMatch(/imageWidth/);
  });

  it("I2 PAGE export carries the page's lines: Coords, TextEquiv, reading order", () => {
    const xml = toPageXml(input);
    const doc = parseWithLibxml2(xml);
    const ns = { p: 'http://schema.primaresearch.org/PAGE/gts/pagecontent/2019-07-15' };
    try {
      const page = doc.get('/p:PcGts/p:Page', ns);
      expect(page).not.toBeNull();
      const textLines = doc.find('//p:TextRegion/p:TextLine', ns);
      expect(
        textLines.map(
          (l) => (l as unknown as { attr(n: string): { value: string } }).attr('id').value,
        ),
      ).toEqual(expected.map((e) => e.id));
      for (const [i, e] of expected.entries()) {
        const coords = doc.get(`//p:TextLine[@id="${e.id}"]/p:Coords/@points`, ns);
        expect(coords?.content, `line ${i} coords`).toBe(pointsOf(e.box));
        const unicode = doc.get(`//p:TextLine[@id="${e.id}"]/p:TextEquiv/p:Unicode`, ns);
        expect(unicode?.content, `line ${i} text`).toBe(e.text);
      }
      expect(doc.get('//p:TextLine[@id="line_0"]/p:TextEquiv/@conf', ns)?.content).toBe('0.930');
      expect(
        doc.get('//p:ReadingOrder/p:OrderedGroup/p:RegionRefIndexed/@regionRef', ns)?.content,
      ).toBe('region_1');
      expect(doc.get('//p:TextRegion/@id', ns)?.content).toBe('region_1');
      expect(doc.get('/p:PcGts/p:Page/@imageFilename', ns)?.content).toBe(canvasUri);
      expect(doc.get('/p:PcGts/p:Metadata/p:Creator', ns)?.content).toBe('Quire');
    } finally {
      doc.dispose();
    }
  });

  it('I2 PAGE and hOCR are image formats: an audio page is refused', () => {
    const audio = { canvasUri, kind: 'audio' as const, segments: [] };
    expect(() => exportPage('page', audio)).toThrow(UnsupportedExportError);
    expect(() => exportPage('hocr', audio)).toThrow(UnsupportedExportError);
  });
});

describe('I2 hOCR export', () => {
  it("I2 hOCR is well-formed XHTML whose ocr_line elements carry the page's lines", () => {
    const html = toHocr(input);
    // libxml2 parses it as XML: well-formed, one root, entities balanced.
    parseWithLibxml2(html).dispose();
    const parser = new XMLParser({
      ignoreAttributes: false,
      attributeNamePrefix: '',
      isArray: (name) => name === 'span' || name === 'meta',
      processEntities: true,
      htmlEntities: true,
    });
    const doc = parser.parse(html);
    const meta = Object.fromEntries(
      doc.html.head.meta
        .filter((m: { name?: string }) => m.name)
        .map((m: { name: string; content: string }) => [m.name, m.content]),
    );
    expect(meta['ocr-system']).toBe('Quire');
    expect(meta['ocr-capabilities'].split(' ')).toEqual([...HOCR_CAPABILITIES]);
    const page = doc.html.body.div;
    expect(page.class).toBe('ocr_page');
    expect(page.title).toBe(`image "${canvasUri}"; bbox 0 0 1000 800; ppageno 0`);
    expect(page.div.class).toBe('ocr_carea');
    const par = page.div.p;
    expect(par.class).toBe('ocr_par');
    const spans = par.span as Array<{ class: string; id: string; title: string; '#text'?: string }>;
    expect(spans.map((s) => s.class)).toEqual(['ocr_line', 'ocr_line', 'ocr_line']);
    for (const [i, e] of expected.entries()) {
      const span = spans[i]!;
      expect(span.id).toBe(e.id);
      const bbox = /(?:^|; )bbox (\d+) (\d+) (\d+) (\d+)/.exec(span.title);
      expect(bbox?.slice(1).map(Number)).toEqual([
        e.box.x,
        e.box.y,
        e.box.x + e.box.w,
        e.box.y + e.box.h,
      ]);
      expect(span['#text'] ?? '').toBe(e.text);
    }
    expect(spans[0]!.title).toMatch(/; x_wconf 93$/);
    // Every id unique, as hOCR requires.
    const ids = [...html.matchAll(/ id="([^"]+)"/g)].map((m) => m[1]);
    expect(new Set(ids).size).toBe(ids.length);
  });
});

describe('I3 transcript import', () => {
  it('I3 reads the OCR-D ground truth PAGE file of a real page: size, producer, lines in reading order', () => {
    const transcript = parseTranscript(readFileSync(KANT.page));
    expect(transcript.format).toBe('page');
    expect(transcript.namespace).toBe(
      'http://schema.primaresearch.org/PAGE/gts/pagecontent/2019-07-15',
    );
    expect(transcript.producer).toBe('OCR-D');
    expect([transcript.width, transcript.height]).toEqual([KANT.width, KANT.height]);
    const texts = transcript.segments.map((s) => s.text);
    expect(texts[0]).toBe('Berliniſche Monatsſchrift.');
    // The ground truth's own line text (its words are '1784' and '.').
    expect(texts[1]).toBe('1784 .');
    expect(transcript.segments[0]!.target).toEqual({
      kind: 'xywh',
      box: { x: 114, y: 366, w: 804, h: 72 },
    });
    expect(transcript.segments.map((s) => s.index)).toEqual(texts.map((_, i) => i));
    expect(transcript.segments.length).toBeGreaterThan(20);
  });

  it('I3 the same page as ALTO gives the same lines and boxes as its PAGE', () => {
    const page = parseTranscript(readFileSync(KANT.page));
    const alto = parseTranscript(readFileSync(KANT.alto));
    expect(alto.format).toBe('alto');
    expect([alto.width, alto.height]).toEqual([KANT.width, KANT.height]);
    const key = (s: Segment) =>
      s.target.kind === 'xywh' ? `${s.target.box.y}:${s.target.box.x}` : '';
    const altoByBox = new Map(alto.segments.map((s) => [key(s), s]));
    let matched = 0;
    for (const line of page.segments) {
      const twin = altoByBox.get(key(line));
      if (!twin) continue;
      matched++;
      expect(twin.target).toEqual(line.target);
      expect(twin.text.replace(/\s+/g, '')).toBe(line.text.replace(/\s+/g, ''));
    }
    expect(matched).toBeGreaterThanOrEqual(page.segments.length - 2);
  });

  it('I3 Quire reads back its own PAGE and ALTO: same lines, boxes and text', () => {
    for (const format of ['page', 'alto'] as const) {
      const body = exportPage(format, input).body;
      const back = parseTranscript(new TextEncoder().encode(body));
      expect(back.format).toBe(format);
      expect([back.width, back.height]).toEqual([1000, 800]);
      expect(
        back.segments.map((s) => ({
          box: s.target.kind === 'xywh' ? s.target.box : null,
          text: s.text,
        })),
      ).toEqual(expected.map((e) => ({ box: e.box, text: e.text })));
      expect(
        exportPage(format, {
          ...input,
          segments: back.segments,
          createdAt: undefined,
        } as typeof input).body.replace(/<(Created|LastChange)>[^<]*/g, ''),
      ).toBe(body.replace(/<(Created|LastChange)>[^<]*/g, ''));
    }
  });

  const refusals: Array<[string, string, string]> = [
    ['not XML', 'hello, world', 'transcript_malformed'],
    [
      'truncated XML',
      '<PcGts xmlns="http://schema.primaresearch.org/PAGE/gts/pagecontent/2019-07-15"><Page',
      'transcript_malformed',
    ],
    [
      'a DOCTYPE (entity expansion)',
      '<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">]><alto xmlns="http://www.loc.gov/standards/alto/ns-v4#">&lol;</alto>',
      'transcript_malformed',
    ],
    [
      'another XML vocabulary',
      '<svg xmlns="http://www.w3.org/2000/svg"/>',
      'transcript_unsupported',
    ],
    [
      'ALTO in millimetres',
      '<alto xmlns="http://www.loc.gov/standards/alto/ns-v4#"><Description><MeasurementUnit>mm10</MeasurementUnit></Description><Layout><Page WIDTH="10" HEIGHT="10"/></Layout></alto>',
      'transcript_unsupported',
    ],
    [
      'PAGE without a size',
      '<PcGts xmlns="http://schema.primaresearch.org/PAGE/gts/pagecontent/2019-07-15"><Page imageFilename="a.png"/></PcGts>',
      'transcript_invalid',
    ],
    [
      'a line without coordinates',
      '<PcGts xmlns="http://schema.primaresearch.org/PAGE/gts/pagecontent/2019-07-15"><Page imageFilename="a" imageWidth="9" imageHeight="9"><TextRegion id="r"><Coords points="0,0 1,1"/><TextLine id="l"><TextEquiv><Unicode>x</Unicode></TextEquiv></TextLine></TextRegion></Page></PcGts>',
      'transcript_invalid',
    ],
    [
      'a coordinate that is not a number',
      '<PcGts xmlns="http://schema.primaresearch.org/PAGE/gts/pagecontent/2019-07-15"><Page imageFilename="a" imageWidth="9" imageHeight="9"><TextRegion id="r"><TextLine id="l"><Coords points="0,0 a,1"/></TextLine></TextRegion></Page></PcGts>',
      'transcript_invalid',
    ],
    ['bytes that are not UTF-8', '\u00ff', 'transcript_malformed'],
  ];
  for (const [what, body, code] of refusals) {
    it(`I3 refuses ${what} with ${code}`, () => {
      const bytes = what.startsWith('bytes')
        ? new Uint8Array([0x3c, 0xff, 0xfe, 0x3e])
        : new TextEncoder().encode(body);
      try {
        parseTranscript(bytes);
        expect.unreachable('accepted');
      } catch (error) {
        expect(error).toBeInstanceOf(TranscriptRejection);
        expect((error as TranscriptRejection).code).toBe(code);
      }
    });
  }

  it('I3 refuses a transcript over the byte or line limit with transcript_too_large', () => {
    const bytes = readFileSync(KANT.page);
    expect(() =>
      parseTranscript(bytes, { maxTranscriptBytes: 1000, maxTranscriptLines: 10_000 }),
    ).toThrow(expect.objectContaining({ code: 'transcript_too_large' }));
    expect(() =>
      parseTranscript(bytes, { maxTranscriptBytes: 1e7, maxTranscriptLines: 5 }),
    ).toThrow(expect.objectContaining({ code: 'transcript_too_large' }));
  });
});
