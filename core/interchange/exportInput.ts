/** What every export of a page is made from, and its one refusal. Pure. */

import type { Segment } from '../annotation';
import { DomainError } from '../errors';
import type { MediaKind } from '../media';
import type { ExportProvenance } from './provenance';

export interface ExportInput {
  canvasUri: string;
  kind: MediaKind;
  segments: readonly Segment[];
  /** Image pages: pixel size of the canvas (ALTO needs it). */
  width?: number;
  height?: number;
  /** Audio pages: duration in seconds; cues are clamped to it. */
  duration?: number;
  /** BCP 47 or ISO 639 language of the transcript. */
  language?: string;
  /** I8: the engine, model and version that read the page and the human edits since. */
  provenance?: ExportProvenance;
}

/** The format does not apply to this kind of page (ALTO for audio, subtitles for images). */
export class UnsupportedExportError extends DomainError {
  override name = 'UnsupportedExportError';
  constructor(message: string) {
    super('unsupported_format', message);
  }
}
