/**
 * PAGE XML export (I2): the PAGE content schema of 2019-07-15, as Transkribus, eScriptorium
 * and OCR-D read it. Quire keeps lines, not regions, so a page's lines go into one
 * `TextRegion` named by the reading order; each line has its box as a four-point `Coords`
 * polygon and its text (and confidence) in `TextEquiv`. Pure.
 */

import { type ActorNames, actorName, actorOfLineAuthor } from '../actor';
import { type Box, isCheckedLine, lineStateOf, type Segment } from '../annotation';
import type { ExportInput } from './exportInput';
import { imageLinesOf, unionBox } from './lines';
import { describeStep, type ExportProvenance } from './provenance';
import { escapeXml } from './xml';

export const PAGE_NAMESPACE = 'http://schema.primaresearch.org/PAGE/gts/pagecontent/2019-07-15';
const PAGE_SCHEMA_LOCATION = `${PAGE_NAMESPACE} ${PAGE_NAMESPACE}/pagecontent.xsd`;

/** The four corners of a box, clockwise from the top left, as PAGE writes points. */
export function boxPoints(box: Box): string {
  const right = box.x + box.w;
  const bottom = box.y + box.h;
  return `${box.x},${box.y} ${right},${box.y} ${right},${bottom} ${box.x},${bottom}`;
}

function confidenceAttribute(confidence: number | undefined): string {
  return confidence === undefined
    ? ''
    : ` conf="${Math.min(1, Math.max(0, confidence)).toFixed(3)}"`;
}

/**
 * V1: a line's text as PAGE holds it: `index="1"` (the one reading of the line), `conf` the
 * engine's confidence for a `machine` line and 1 for a line a person edited or verified, and
 * the state in the line's `custom` attribute (PAGE's place for structured tags), with who and
 * when in `comments`.
 */
function lineStateAttributes(
  segment: Segment,
  names: ActorNames | undefined,
): { line: string; equiv: string } {
  const state = lineStateOf(segment);
  const human = isCheckedLine(segment);
  const equiv = ` index="1"${confidenceAttribute(human ? 1 : segment.confidence)}`;
  const stamp = segment.stamp;
  // R7: by name when the export looked the names up; the stamp's own reference otherwise.
  const who = stamp
    ? names
      ? actorName(actorOfLineAuthor(stamp.by), names)
      : `${stamp.by.kind}:${stamp.by.id}`
    : '';
  const by = stamp ? ` comments="${escapeXml(`${state} by ${who} at ${stamp.at}`)}"` : '';
  return { line: ` custom="quireState {state:${state};}"${by}`, equiv };
}

export function toPageXml(input: ExportInput & { createdAt?: Date }): string {
  const { width, height, lines } = imageLinesOf(input, 'PAGE XML');
  const created = (input.createdAt ?? new Date()).toISOString();
  const out: string[] = [];
  out.push('<?xml version="1.0" encoding="UTF-8"?>');
  out.push(
    `<PcGts xmlns="${PAGE_NAMESPACE}" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:schemaLocation="${PAGE_SCHEMA_LOCATION}">`,
  );
  out.push('  <Metadata>');
  out.push('    <Creator>Quire</Creator>');
  out.push(`    <Created>${created}</Created>`);
  out.push(`    <LastChange>${created}</LastChange>`);
  out.push(...pageMetadataItems(input.provenance));
  out.push('  </Metadata>');
  out.push(
    `  <Page imageFilename="${escapeXml(input.canvasUri)}" imageWidth="${width}" imageHeight="${height}">`,
  );
  if (lines.length > 0) {
    out.push('    <ReadingOrder>');
    out.push('      <OrderedGroup id="ro_1" caption="Regions reading order">');
    out.push('        <RegionRefIndexed index="0" regionRef="region_1"/>');
    out.push('      </OrderedGroup>');
    out.push('    </ReadingOrder>');
    // No primaryLanguage: PAGE names languages from its own list ("German"), not BCP 47 tags.
    out.push('    <TextRegion id="region_1" type="paragraph">');
    out.push(`      <Coords points="${boxPoints(unionBox(lines.map((l) => l.box)))}"/>`);
    for (const { segment, box } of lines) {
      const attributes = lineStateAttributes(segment, input.provenance?.names);
      out.push(`      <TextLine id="line_${segment.index}"${attributes.line}>`);
      out.push(`        <Coords points="${boxPoints(box)}"/>`);
      out.push(`        <TextEquiv${attributes.equiv}>`);
      out.push(`          <Unicode>${escapeXml(singleLine(segment.text))}</Unicode>`);
      out.push('        </TextEquiv>');
      out.push('      </TextLine>');
    }
    // The region's own text: its lines in order, one per line, as PAGE consumers expect.
    out.push('      <TextEquiv>');
    out.push(
      `        <Unicode>${lines.map((l) => escapeXml(singleLine(l.segment.text))).join('&#10;')}</Unicode>`,
    );
    out.push('      </TextEquiv>');
    out.push('    </TextRegion>');
  }
  out.push('  </Page>');
  out.push('</PcGts>');
  return `${out.join('\n')}\n`;
}

/** A line's text on one line: PAGE line text has no breaks of its own. */
function singleLine(text: string): string {
  return text.replace(/\s*[\r\n]+\s*/g, ' ').trim();
}

/**
 * I8: one `MetadataItem` of type processingStep per step of the revision (`engine`, `import`
 * or `edit`), its value naming the engine, model and version, the imported file's software,
 * or the editor, dated when the revision was written.
 */
function pageMetadataItems(provenance: ExportProvenance | undefined): string[] {
  if (!provenance) return [];
  return provenance.steps.map((step) => {
    const name = step.kind === 'human' ? 'edit' : step.kind;
    const item = `    <MetadataItem type="processingStep" name="${name}" value="${escapeXml(describeStep(step))}" date="${step.at.toISOString()}"`;
    if (step.kind !== 'human' || !step.editorRef) return `${item}/>`;
    // R7: the editor's account (or key) beside the name, as a label PAGE keeps.
    const [kind, id] = step.editorRef.split(':');
    return `${item}>\n      <Labels externalModel="quire"><Label type="${kind}" value="${id}"/></Labels>\n    </MetadataItem>`;
  });
}
