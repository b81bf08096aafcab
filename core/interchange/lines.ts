/**
 * What the line-based image formats (ALTO, PAGE, hOCR) share: the page's size and its lines in
 * reading order, each with its box in whole pixels inside the page. Pure.
 */

import type { Box, Segment } from '../annotation';
import { type ExportInput, UnsupportedExportError } from './exportInput';

export interface ImageLine {
  segment: Segment;
  box: Box;
}

export function imageLinesOf(
  input: ExportInput,
  format: string,
): { width: number; height: number; lines: ImageLine[] } {
  if (input.kind !== 'image')
    throw new UnsupportedExportError(`${format} export applies to image pages only`);
  const width = Math.max(0, Math.round(input.width ?? 0));
  const height = Math.max(0, Math.round(input.height ?? 0));
  if (width <= 0 || height <= 0)
    throw new UnsupportedExportError(`${format} export needs the page width and height`);
  const lines = [...input.segments]
    .sort((a, b) => a.index - b.index)
    .flatMap((segment) =>
      segment.target.kind === 'xywh'
        ? [{ segment, box: clampBox(segment.target.box, width, height) }]
        : [],
    );
  return { width, height, lines };
}

/** The smallest box holding every box given (a zero box for none). */
export function unionBox(boxes: readonly Box[]): Box {
  if (boxes.length === 0) return { x: 0, y: 0, w: 0, h: 0 };
  const left = Math.min(...boxes.map((b) => b.x));
  const top = Math.min(...boxes.map((b) => b.y));
  const right = Math.max(...boxes.map((b) => b.x + b.w));
  const bottom = Math.max(...boxes.map((b) => b.y + b.h));
  return { x: left, y: top, w: right - left, h: bottom - top };
}

/** A box rounded to whole pixels and kept inside the page. */
export function clampBox(box: Box, width: number, height: number): Box {
  const x = Math.min(Math.max(0, Math.round(box.x)), width);
  const y = Math.min(Math.max(0, Math.round(box.y)), height);
  const w = Math.max(0, Math.min(Math.round(box.w), width - x));
  const h = Math.max(0, Math.min(Math.round(box.h), height - y));
  return { x, y, w, h };
}
