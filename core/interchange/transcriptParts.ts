/**
 * What every transcript reader shares (I3 PAGE and ALTO, I6 hOCR, I5 a PDF's text layer): the
 * shape a read transcript has, the refusals with their stable codes, and the small checks on
 * what a file says of its page and lines. Pure.
 */

import type { Box, Segment } from '../annotation';
import { DomainError, type ErrorCode } from '../errors';

/** I3 PAGE and ALTO, I6 hOCR; I5 `pdf` is a PDF's own text layer (core/interchange/pdfText.ts); F8 `iiif` the text annotations of a IIIF manifest. */
export type TranscriptFormat = 'page' | 'alto' | 'hocr' | 'pdf' | 'iiif';

export interface ImportedTranscript {
  format: TranscriptFormat;
  /** The file's namespace (PAGE release or ALTO version), kept in the provenance. */
  namespace: string;
  /** The software or creator the file names (PAGE `Metadata/Creator`, ALTO processing software). */
  producer: string | null;
  width: number;
  height: number;
  language?: string;
  segments: Segment[];
}

/** The codes a transcript file is refused with (kinds in core/errorCodes.ts). */
export const TRANSCRIPT_REJECTIONS = [
  'transcript_malformed',
  'transcript_unsupported',
  'transcript_too_large',
  'transcript_invalid',
  'transcript_size_mismatch',
  // R6: the API's own limits, applied to what a file says.
  'transcript_too_deep',
  'transcript_reserved_name',
  'transcript_invalid_text',
  'transcript_line_too_long',
  'transcript_invalid_language',
  'transcript_invalid_namespace',
] as const satisfies readonly ErrorCode[];

export type TranscriptRejectionCode = (typeof TRANSCRIPT_REJECTIONS)[number];

export class TranscriptRejection extends DomainError {
  override name = 'TranscriptRejection';
  constructor(
    override readonly code: TranscriptRejectionCode,
    message: string,
  ) {
    super(code, message);
  }
}

export interface TranscriptLimits {
  /** Bytes of one transcript file. */
  maxTranscriptBytes: number;
  /** Text lines in one transcript file. */
  maxTranscriptLines: number;
}

export const DEFAULT_TRANSCRIPT_LIMITS: TranscriptLimits = {
  maxTranscriptBytes: 8 * 1024 * 1024,
  maxTranscriptLines: 10_000,
};

export function localName(name: string): string {
  const colon = name.indexOf(':');
  return colon === -1 ? name : name.slice(colon + 1);
}

export function positiveInteger(value: string | undefined, what: string): number {
  const n = Number(value);
  if (value === undefined || !Number.isFinite(n) || n <= 0 || n > 1_000_000) {
    throw new TranscriptRejection(
      'transcript_invalid',
      `the transcript's ${what} is missing or not a positive number`,
    );
  }
  return Math.round(n);
}

/** Keeps a box inside the page in whole pixels; tools often draw a pixel or two past the edge. */
export function insidePage(box: Box, width: number, height: number): Box {
  const x = Math.min(Math.max(0, Math.round(box.x)), width);
  const y = Math.min(Math.max(0, Math.round(box.y)), height);
  const right = Math.min(Math.max(x, Math.round(box.x + box.w)), width);
  const bottom = Math.min(Math.max(y, Math.round(box.y + box.h)), height);
  return { x, y, w: right - x, h: bottom - y };
}

export function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}
