/**
 * Exports of a page's segments (SPEC §7 `export?format=`): plain text for any page,
 * ALTO XML v4, PAGE XML and hOCR for image pages (the last two in core/interchange/, I2),
 * WebVTT and SRT for audio pages. The canonical IIIF AnnotationPage is built in
 * core/annotation.ts. Pure.
 */

import { type Box, isCheckedLine, lineStateOf, type Segment } from './annotation';
import { type ExportInput, UnsupportedExportError } from './interchange/exportInput';
import { toHocr } from './interchange/hocr';
import { clampBox } from './interchange/lines';
import { toPageXml } from './interchange/pageXml';
import { describeStep, type ExportProvenance } from './interchange/provenance';
import { escapeXml } from './interchange/xml';
import type { MediaKind } from './media';
import { readingLines } from './readingText';

export type ExportFormat = 'text' | 'alto' | 'page' | 'hocr' | 'vtt' | 'srt';

export const EXPORT_FORMATS: readonly ExportFormat[] = [
  'text',
  'alto',
  'page',
  'hocr',
  'vtt',
  'srt',
];

export interface ExportResult {
  body: string;
  mediaType: string;
  extension: string;
}

/** I8 V8: the formats that name what wrote the revision (ALTO, PAGE, and hOCR's head). */
export function carriesProvenance(format: string): boolean {
  return format === 'alto' || format === 'page' || format === 'hocr';
}

export function isExportFormat(value: unknown): value is ExportFormat {
  return typeof value === 'string' && (EXPORT_FORMATS as readonly string[]).includes(value);
}

export function exportPage(format: ExportFormat, input: ExportInput): ExportResult {
  switch (format) {
    case 'text':
      return {
        body: toPlainText(input.segments, input.kind),
        mediaType: 'text/plain; charset=utf-8',
        extension: 'txt',
      };
    case 'alto':
      return {
        body: toAltoXml(input),
        mediaType: 'application/xml; charset=utf-8',
        extension: 'xml',
      };
    case 'page':
      return {
        body: toPageXml(input),
        mediaType: 'application/xml; charset=utf-8',
        extension: 'page.xml',
      };
    case 'hocr':
      return {
        body: toHocr(input),
        mediaType: 'application/xhtml+xml; charset=utf-8',
        extension: 'hocr',
      };
    case 'vtt':
      return { body: toWebVtt(input), mediaType: 'text/vtt; charset=utf-8', extension: 'vtt' };
    case 'srt':
      return {
        body: toSrt(input),
        mediaType: 'application/x-subrip; charset=utf-8',
        extension: 'srt',
      };
  }
}

function inReadingOrder(segments: readonly Segment[]): Segment[] {
  return [...segments].sort((a, b) => a.index - b.index);
}

/**
 * One line per segment in reading order; line breaks inside a segment become spaces. An image
 * page's text is read as running prose (V8): a word hyphenated across lines is joined here,
 * in the export, never in the lines themselves.
 */
export function toPlainText(segments: readonly Segment[], kind: MediaKind): string {
  const texts = inReadingOrder(segments).map((s) => s.text);
  const lines =
    kind === 'image'
      ? readingLines(texts)
      : texts.map((text) => text.replace(/\s*[\r\n]+\s*/g, ' ').trim());
  return lines.length === 0 ? '' : `${lines.join('\n')}\n`;
}

// ---------------------------------------------------------------------------------------
// ALTO

const ALTO_NS = 'http://www.loc.gov/standards/alto/ns-v4#';
const ALTO_SCHEMA = 'http://www.loc.gov/standards/alto/v4/alto-4-2.xsd';

function positionAttributes(box: Box): string {
  return `HPOS="${box.x}" VPOS="${box.y}" WIDTH="${box.w}" HEIGHT="${box.h}"`;
}

/**
 * ALTO v4: one TextBlock holding one TextLine per line segment (reading order), each line
 * split into String elements at whitespace with SP between them. Word positions are not
 * known (engines give line boxes), so only lines carry coordinates. Units are pixels.
 */
export function toAltoXml(input: ExportInput): string {
  if (input.kind !== 'image')
    throw new UnsupportedExportError('ALTO export applies to image pages only');
  const width = Math.max(0, Math.round(input.width ?? 0));
  const height = Math.max(0, Math.round(input.height ?? 0));
  if (width <= 0 || height <= 0)
    throw new UnsupportedExportError('ALTO export needs the page width and height');
  const lines = inReadingOrder(input.segments).flatMap((segment) =>
    segment.target.kind === 'xywh'
      ? [{ segment, box: clampBox(segment.target.box, width, height) }]
      : [],
  );
  const out: string[] = [];
  out.push('<?xml version="1.0" encoding="UTF-8"?>');
  out.push(
    `<alto xmlns="${ALTO_NS}" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:schemaLocation="${ALTO_NS} ${ALTO_SCHEMA}">`,
  );
  out.push('  <Description>');
  out.push('    <MeasurementUnit>pixel</MeasurementUnit>');
  out.push('    <sourceImageInformation>');
  out.push(`      <fileName>${escapeXml(input.canvasUri)}</fileName>`);
  out.push('    </sourceImageInformation>');
  out.push(...altoProcessing(input.provenance));
  // V1: which lines a person edited or verified, as ALTO's processing notes say it.
  for (const state of ['edited', 'verified'] as const) {
    const ids = lines.filter((l) => lineStateOf(l.segment) === state);
    if (ids.length === 0) continue;
    out.push(`    <Processing ID="lines_${state}">`);
    out.push(
      `      <processingStepDescription>${state} by a person: ${ids.map((l) => `line_${l.segment.index}`).join(' ')}</processingStepDescription>`,
    );
    out.push('    </Processing>');
  }
  out.push('  </Description>');
  out.push('  <Layout>');
  out.push(`    <Page ID="page_1" PHYSICAL_IMG_NR="1" WIDTH="${width}" HEIGHT="${height}">`);
  out.push(`      <PrintSpace ${positionAttributes({ x: 0, y: 0, w: width, h: height })}>`);
  if (lines.length > 0) {
    const left = Math.min(...lines.map((l) => l.box.x));
    const top = Math.min(...lines.map((l) => l.box.y));
    const right = Math.max(...lines.map((l) => l.box.x + l.box.w));
    const bottom = Math.max(...lines.map((l) => l.box.y + l.box.h));
    const lang = input.language ? ` LANG="${escapeXml(input.language)}"` : '';
    out.push(
      `        <TextBlock ID="block_1" ${positionAttributes({ x: left, y: top, w: right - left, h: bottom - top })}${lang}>`,
    );
    for (const { segment, box } of lines) {
      const lineId = `line_${segment.index}`;
      out.push(`          <TextLine ID="${lineId}" ${positionAttributes(box)}>`);
      const words = segment.text.split(/\s+/).filter((w) => w.length > 0);
      // A TextLine must hold at least one String; an empty line keeps an empty one.
      const strings = words.length > 0 ? words : [''];
      // V1: a line a person edited or verified is certain: WC 1 and CC 0 for every character.
      const human = isCheckedLine(segment);
      const confidence = human
        ? ' WC="1.00"'
        : segment.confidence !== undefined
          ? ` WC="${Math.min(1, Math.max(0, segment.confidence)).toFixed(2)}"`
          : '';
      strings.forEach((word, i) => {
        if (i > 0) out.push('            <SP/>');
        const cc = human && word.length > 0 ? ` CC="${'0'.repeat([...word].length)}"` : '';
        out.push(
          `            <String ID="${lineId}_w${i}" CONTENT="${escapeXml(word)}"${confidence}${cc}/>`,
        );
      });
      out.push('          </TextLine>');
    }
    out.push('        </TextBlock>');
  }
  out.push('      </PrintSpace>');
  out.push('    </Page>');
  out.push('  </Layout>');
  out.push('</alto>');
  return `${out.join('\n')}\n`;
}

/**
 * I8: one ALTO v4 `Processing` per step of the revision: the engine reading as
 * contentGeneration with the engine as processingSoftware and its model in the settings, an
 * import as contentGeneration naming the software the file named, each human edit as
 * contentModification with the editor as processingAgency.
 */
function altoProcessing(provenance: ExportProvenance | undefined): string[] {
  if (!provenance) return [];
  const out: string[] = [];
  provenance.steps.forEach((step, i) => {
    out.push(`    <Processing ID="processing_${i + 1}">`);
    out.push(
      `      <processingCategory>${step.kind === 'human' ? 'contentModification' : 'contentGeneration'}</processingCategory>`,
    );
    out.push(`      <processingDateTime>${step.at.toISOString()}</processingDateTime>`);
    if (step.kind === 'human') {
      out.push(`      <processingAgency>${escapeXml(step.editedBy)}</processingAgency>`);
    }
    out.push(
      `      <processingStepDescription>${escapeXml(describeStep(step))}</processingStepDescription>`,
    );
    if (step.kind === 'human' && step.editorRef) {
      // R7: the editor's account (or key) beside the name (`account=7`): ALTO's agency is
      // a bare name.
      out.push(
        `      <processingStepSettings>${escapeXml(step.editorRef.replace(':', '='))}</processingStepSettings>`,
      );
    }
    if (step.kind === 'engine') {
      const settings = [
        ...(step.model ? [`model=${step.model}`] : []),
        ...(step.lineText ? [`lineText=${step.lineText}`] : []),
      ];
      if (settings.length > 0) {
        out.push(
          `      <processingStepSettings>${escapeXml(settings.join(', '))}</processingStepSettings>`,
        );
      }
      out.push('      <processingSoftware>');
      out.push(`        <softwareName>${escapeXml(step.engine)}</softwareName>`);
      if (step.version) {
        out.push(`        <softwareVersion>${escapeXml(step.version)}</softwareVersion>`);
      }
      out.push('      </processingSoftware>');
    } else if (step.kind === 'import' && step.producer) {
      out.push('      <processingSoftware>');
      out.push(`        <softwareName>${escapeXml(step.producer)}</softwareName>`);
      out.push('      </processingSoftware>');
    }
    out.push('    </Processing>');
  });
  return out;
}

// ---------------------------------------------------------------------------------------
// Subtitles

interface Cue {
  start: number;
  end: number;
  text: string;
  speaker?: string;
}

function cuesOf(input: ExportInput, format: string): Cue[] {
  if (input.kind !== 'audio')
    throw new UnsupportedExportError(`${format} export applies to audio pages only`);
  const limit =
    input.duration !== undefined && input.duration > 0 ? input.duration : Number.POSITIVE_INFINITY;
  const cues: Cue[] = [];
  const ordered = [...input.segments].sort((a, b) => {
    const sa = a.target.kind === 't' ? a.target.start : 0;
    const sb = b.target.kind === 't' ? b.target.start : 0;
    return sa - sb || a.index - b.index;
  });
  for (const segment of ordered) {
    if (segment.target.kind !== 't') continue;
    const start = Math.min(Math.max(0, segment.target.start), limit);
    const end = Math.min(Math.max(start, segment.target.end), limit);
    // A cue keeps its line breaks but never a blank line: a blank line ends a cue.
    const text = segment.text
      .split(/\r?\n/)
      .map((l) => l.trim())
      .filter((l) => l.length > 0)
      .join('\n');
    if (text.length === 0) continue;
    const cue: Cue = { start, end, text };
    if (segment.speaker !== undefined) cue.speaker = segment.speaker;
    cues.push(cue);
  }
  return cues;
}

/** hh:mm:ss.mmm (WebVTT) or hh:mm:ss,mmm (SRT). */
export function formatTimestamp(seconds: number, separator: '.' | ','): string {
  const totalMs = Math.max(0, Math.round(seconds * 1000));
  const ms = totalMs % 1000;
  const totalS = Math.floor(totalMs / 1000);
  const s = totalS % 60;
  const m = Math.floor(totalS / 60) % 60;
  const h = Math.floor(totalS / 3600);
  const pad = (n: number, width = 2) => String(n).padStart(width, '0');
  return `${pad(h)}:${pad(m)}:${pad(s)}${separator}${pad(ms, 3)}`;
}

function escapeVtt(text: string): string {
  // "-->" cannot appear in cue text; escaping ">" also covers it.
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

export function toWebVtt(input: ExportInput): string {
  const cues = cuesOf(input, 'WebVTT');
  const blocks = cues.map((cue, i) => {
    const speaker = cue.speaker ? `<v ${escapeVtt(cue.speaker).replace(/\s+/g, ' ')}>` : '';
    return `${i + 1}\n${formatTimestamp(cue.start, '.')} --> ${formatTimestamp(cue.end, '.')}\n${speaker}${escapeVtt(cue.text)}`;
  });
  return `WEBVTT\n\n${blocks.map((b) => `${b}\n\n`).join('')}`;
}

export function toSrt(input: ExportInput): string {
  const cues = cuesOf(input, 'SRT');
  return cues
    .map((cue, i) => {
      const speaker = cue.speaker ? `${cue.speaker}: ` : '';
      const text = `${speaker}${cue.text}`.replace(/-->/g, '->');
      return `${i + 1}\n${formatTimestamp(cue.start, ',')} --> ${formatTimestamp(cue.end, ',')}\n${text}\n\n`;
    })
    .join('');
}
