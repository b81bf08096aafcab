import { XMLParser, XMLValidator } from 'fast-xml-parser';
import { parseSync } from 'subtitle';
import { describe, expect, it } from 'vitest';
import type { Segment } from '../../core/annotation';
import {
  exportPage,
  formatTimestamp,
  toAltoXml,
  toPlainText,
  toSrt,
  toWebVtt,
} from '../../core/exports';
import { UnsupportedExportError } from '../../core/interchange/exportInput';

const canvasUri = 'https://quire.example/iiif/item/a&b/canvas/1';

const imageSegments: Segment[] = [
  {
    index: 1,
    target: { kind: 'xywh', box: { x: 40, y: 120, w: 900, h: 48 } },
    text: 'second <line> & "quotes"',
  },
  {
    index: 0,
    target: { kind: 'xywh', box: { x: 40, y: 60, w: 910.6, h: 50 } },
    text: 'First line',
    confidence: 0.93,
  },
  { index: 2, target: { kind: 'xywh', box: { x: 30, y: 190, w: 2000, h: 40 } }, text: '' },
];

const audioSegments: Segment[] = [
  {
    index: 1,
    target: { kind: 't', start: 3.25, end: 6.5 },
    text: 'Ask not what your country can do --> for you',
    speaker: 'JFK',
  },
  {
    index: 0,
    target: { kind: 't', start: 0, end: 2.999 },
    text: 'And so, my fellow Americans:\n\nask not <b>',
  },
  { index: 2, target: { kind: 't', start: 3700.0125, end: 3725 }, text: 'Ein Satz über Zeit.' },
];

type XmlNode = Record<string, unknown>;
const asArray = (v: unknown): XmlNode[] =>
  v === undefined ? [] : Array.isArray(v) ? (v as XmlNode[]) : [v as XmlNode];

/** Structural check of ALTO v4 with a real XML parser: namespace, nesting, required attributes. */
function checkAltoStructure(xml: string, width: number, height: number) {
  expect(XMLValidator.validate(xml)).toBe(true);
  const parser = new XMLParser({
    ignoreAttributes: false,
    attributeNamePrefix: '@',
    parseAttributeValue: false,
    preserveOrder: false,
  });
  const doc = parser.parse(xml) as XmlNode;
  const alto = doc.alto as XmlNode;
  expect(alto['@xmlns']).toBe('http://www.loc.gov/standards/alto/ns-v4#');
  expect(String(alto['@xsi:schemaLocation'])).toContain('alto-4');
  const description = alto.Description as XmlNode;
  expect(description.MeasurementUnit).toBe('pixel');
  const page = (alto.Layout as XmlNode).Page as XmlNode;
  expect(page['@ID']).toBeTruthy();
  expect(Number(page['@WIDTH'])).toBe(width);
  expect(Number(page['@HEIGHT'])).toBe(height);
  const printSpace = page.PrintSpace as XmlNode;
  const ids = new Set<string>();
  const lines: { text: string; box: number[]; wc?: string }[] = [];
  for (const block of asArray(printSpace.TextBlock)) {
    ids.add(String(block['@ID']));
    for (const line of asArray(block.TextLine)) {
      const box = ['@HPOS', '@VPOS', '@WIDTH', '@HEIGHT'].map((k) => {
        expect(String(line[k])).toMatch(/^\d+$/);
        return Number(line[k]);
      });
      expect(box[0]! + box[2]!).toBeLessThanOrEqual(width);
      expect(box[1]! + box[3]!).toBeLessThanOrEqual(height);
      const lineId = String(line['@ID']);
      expect(ids.has(lineId)).toBe(false);
      ids.add(lineId);
      const strings = asArray(line.String);
      expect(strings.length).toBeGreaterThanOrEqual(1);
      for (const s of strings) {
        expect(s).toHaveProperty('@CONTENT');
        expect(ids.has(String(s['@ID']))).toBe(false);
        ids.add(String(s['@ID']));
      }
      lines.push({
        text: strings
          .map((s) => String(s['@CONTENT']))
          .join(' ')
          .trim(),
        box,
        wc: strings[0]!['@WC'] as string | undefined,
      });
    }
  }
  return lines;
}

describe('exports of a page (SPEC §7 export formats)', () => {
  it('Q1 plain text has one line per segment in reading order', () => {
    expect(toPlainText(imageSegments, 'image')).toBe('First line\nsecond <line> & "quotes"\n\n');
    expect(toPlainText([], 'image')).toBe('');
    expect(
      exportPage('text', { canvasUri, kind: 'audio', segments: audioSegments }).body.split('\n')[0],
    ).toBe('And so, my fellow Americans: ask not <b>');
  });

  it('Q1 ALTO v4 export is well-formed and carries line boxes and text', () => {
    const xml = toAltoXml({
      canvasUri,
      kind: 'image',
      segments: imageSegments,
      width: 1000,
      height: 400,
      language: 'en',
    });
    const lines = checkAltoStructure(xml, 1000, 400);
    expect(lines.map((l) => l.text)).toEqual(['First line', 'second <line> & "quotes"', '']);
    expect(lines[0]!.box).toEqual([40, 60, 911, 50]);
    expect(lines[0]!.wc).toBe('0.93');
    // Clamped to the page.
    expect(lines[2]!.box).toEqual([30, 190, 970, 40]);
    expect(xml).toContain('&amp;b/canvas/1');
  });

  it('Q1 ALTO of a page without lines is still well-formed', () => {
    const xml = toAltoXml({ canvasUri, kind: 'image', segments: [], width: 10, height: 10 });
    expect(checkAltoStructure(xml, 10, 10)).toEqual([]);
  });

  it('Q1 exports refuse formats that do not fit the page kind', () => {
    expect(() =>
      toAltoXml({ canvasUri, kind: 'audio', segments: audioSegments, width: 1, height: 1 }),
    ).toThrow(UnsupportedExportError);
    expect(() => toAltoXml({ canvasUri, kind: 'image', segments: imageSegments })).toThrow(
      UnsupportedExportError,
    );
    expect(() => toWebVtt({ canvasUri, kind: 'image', segments: imageSegments })).toThrow(
      UnsupportedExportError,
    );
    expect(() => exportPage('srt', { canvasUri, kind: 'image', segments: imageSegments })).toThrow(
      UnsupportedExportError,
    );
  });

  it('Q1 WebVTT round-trips timings and text through a subtitle parser', () => {
    const vtt = toWebVtt({ canvasUri, kind: 'audio', segments: audioSegments, duration: 3720 });
    expect(vtt.startsWith('WEBVTT\n\n')).toBe(true);
    const cues = parseSync(vtt).flatMap((n) => (n.type === 'cue' ? [n.data] : []));
    expect(cues.map((c) => [c.start, c.end])).toEqual([
      [0, 2999],
      [3250, 6500],
      [3700013, 3720000],
    ]);
    expect(cues[0]!.text).toBe('And so, my fellow Americans:\nask not &lt;b&gt;');
    expect(cues[1]!.text).toBe('<v JFK>Ask not what your country can do --&gt; for you');
    expect(cues[2]!.text).toBe('Ein Satz über Zeit.');
  });

  it('Q1 SRT round-trips timings and text through a subtitle parser', () => {
    const srt = toSrt({ canvasUri, kind: 'audio', segments: audioSegments });
    const cues = parseSync(srt).flatMap((n) => (n.type === 'cue' ? [n.data] : []));
    expect(cues.map((c) => [c.start, c.end])).toEqual([
      [0, 2999],
      [3250, 6500],
      [3700013, 3725000],
    ]);
    expect(cues.map((c) => c.text)).toEqual([
      'And so, my fellow Americans:\nask not <b>',
      'JFK: Ask not what your country can do -> for you',
      'Ein Satz über Zeit.',
    ]);
  });

  it('Q1 timestamps format hours, minutes, seconds and milliseconds', () => {
    expect(formatTimestamp(0, '.')).toBe('00:00:00.000');
    expect(formatTimestamp(3661.0016, ',')).toBe('01:01:01,002');
    expect(formatTimestamp(-2, '.')).toBe('00:00:00.000');
  });
});
