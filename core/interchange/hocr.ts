/**
 * hOCR export (I2): an XHTML document with one `ocr_page` holding one `ocr_carea` and
 * `ocr_par`, and an `ocr_line` per line with its `bbox` (and `x_wconf` when the engine gave a
 * confidence). Engines give Quire line boxes, not word boxes, so the line's text is the
 * `ocr_line`'s content and no `ocrx_word` elements are invented; `ocr-capabilities` says so.
 * Pure.
 */

import type { Box } from '../annotation';
import type { ExportInput } from './exportInput';
import { imageLinesOf, unionBox } from './lines';
import { describeStep } from './provenance';
import { escapeXml } from './xml';

export const HOCR_CAPABILITIES = ['ocr_page', 'ocr_carea', 'ocr_par', 'ocr_line'] as const;

/** hOCR's bbox property: left, top, right, bottom. */
function bbox(box: Box): string {
  return `bbox ${box.x} ${box.y} ${box.x + box.w} ${box.y + box.h}`;
}

/** A `title` value: properties joined by "; ", double quotes in strings escaped as hOCR asks. */
function title(...properties: string[]): string {
  return escapeXml(properties.join('; '));
}

export function toHocr(input: ExportInput): string {
  const { width, height, lines } = imageLinesOf(input, 'hOCR');
  const lang = input.language ? ` lang="${escapeXml(input.language)}"` : '';
  const xmlLang = input.language ? ` xml:lang="${escapeXml(input.language)}"` : '';
  const imageName = input.canvasUri.replace(/\\/g, '\\\\').replace(/"/g, '\\"');
  const out: string[] = [];
  out.push('<?xml version="1.0" encoding="UTF-8"?>');
  out.push(
    '<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.0 Transitional//EN" "http://www.w3.org/TR/xhtml1/DTD/xhtml1-transitional.dtd">',
  );
  out.push(`<html xmlns="http://www.w3.org/1999/xhtml"${xmlLang}${lang}>`);
  out.push('<head>');
  out.push(`<title>${escapeXml(input.canvasUri)}</title>`);
  out.push('<meta http-equiv="Content-Type" content="text/html; charset=utf-8"/>');
  out.push('<meta name="ocr-system" content="Quire"/>');
  out.push(`<meta name="ocr-capabilities" content="${HOCR_CAPABILITIES.join(' ')}"/>`);
  // I8 V8: what wrote the revision (and how its line text relates to the image), as ALTO and
  // PAGE say it; hOCR has no element of its own for it.
  // R7: an edit names the person, the account (or key) kept beside the name (`account:7`).
  if (input.provenance && input.provenance.steps.length > 0) {
    const story = input.provenance.steps
      .map((step) =>
        step.kind === 'human' && step.editorRef
          ? `${describeStep(step)} (${step.editorRef})`
          : describeStep(step),
      )
      .join('; ');
    out.push(`<meta name="quire-provenance" content="${escapeXml(story)}"/>`);
  }
  out.push('</head>');
  out.push('<body>');
  out.push(
    `<div class="ocr_page" id="page_1" title="${title(`image "${imageName}"`, bbox({ x: 0, y: 0, w: width, h: height }), 'ppageno 0')}">`,
  );
  if (lines.length > 0) {
    const area = bbox(unionBox(lines.map((l) => l.box)));
    out.push(`<div class="ocr_carea" id="block_1" title="${title(area)}">`);
    out.push(`<p class="ocr_par" id="par_1" title="${title(area)}"${lang}>`);
    for (const { segment, box } of lines) {
      const properties = [bbox(box)];
      if (segment.confidence !== undefined) {
        properties.push(
          `x_wconf ${Math.round(Math.min(1, Math.max(0, segment.confidence)) * 100)}`,
        );
      }
      const text = segment.text.replace(/\s*[\r\n]+\s*/g, ' ').trim();
      out.push(
        `<span class="ocr_line" id="line_${segment.index}" title="${title(...properties)}">${escapeXml(text)}</span>`,
      );
    }
    out.push('</p>');
    out.push('</div>');
  }
  out.push('</div>');
  out.push('</body>');
  out.push('</html>');
  return `${out.join('\n')}\n`;
}
