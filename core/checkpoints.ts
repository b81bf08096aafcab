import type { Segment } from './annotation';
import type { EngineIdentity, LineBox, PageReading } from './provider';

/**
 * T2: what each stage saves before the next one starts, one payload type per stage. A new
 * attempt resumes from these rows, so their shape is part of the stored data: change it only
 * with a reader for the old shape.
 */
export interface CheckpointPayloads {
  /**
   * Image pages, seq 0: the lines found on the page (or taken from its annotation). `engine`
   * is set when the page was read in one pass (P1), whose lines are saved with it.
   */
  segment: { lines: LineBox[]; engine?: EngineIdentity };
  /** Image pages: one row per line, seq = line index. Audio: one row, seq 0, every segment. */
  recognize: RecognizedLine | { segments: Segment[] };
  /** Audio, seq 0: the engine's job id, saved before our copy of the recording may go. */
  submit: { engineJobId: string };
  /** Seq 0: polished text per segment index. */
  polish: { texts: Record<string, string> };
}

export interface RecognizedLine {
  text: string;
  confidence?: number | null;
}

export type CheckpointStage = keyof CheckpointPayloads;

/** One saved checkpoint; narrowing on `stage` types its payload. */
export type Checkpoint = {
  [S in CheckpointStage]: {
    stage: S;
    seq: number;
    attemptNumber: number;
    payload: CheckpointPayloads[S];
  };
}[CheckpointStage];

/** The payloads of one stage, by seq. */
export function payloadsOf<S extends CheckpointStage>(
  saved: readonly Checkpoint[],
  stage: S,
): Map<number, CheckpointPayloads[S]> {
  const out = new Map<number, CheckpointPayloads[S]>();
  for (const row of saved) {
    // The stage column names the payload's type (see `saveCheckpoints`).
    if (row.stage === stage) out.set(row.seq, row.payload as CheckpointPayloads[S]);
  }
  return out;
}

/**
 * P1: the checkpoints a page read in one pass is saved as: the segment row (every line's box,
 * with the engine that read them) and one recognize row per line read with text. A line read
 * empty keeps its box and has no recognize row: a failed line of this attempt (J2).
 */
export function readingCheckpoints(
  attemptNumber: number,
  reading: PageReading & { engine: EngineIdentity },
): {
  segment: Checkpoint & { stage: 'segment' };
  recognized: Array<Checkpoint & { stage: 'recognize' }>;
} {
  const lines = reading.lines.map((line) =>
    line.confidence === undefined
      ? { box: line.box }
      : { box: line.box, confidence: line.confidence },
  );
  const recognized = reading.lines.flatMap((line, seq) =>
    line.text.trim() === ''
      ? []
      : [
          {
            stage: 'recognize' as const,
            seq,
            attemptNumber,
            payload: { text: line.text, confidence: line.confidence ?? null },
          },
        ],
  );
  return {
    segment: {
      stage: 'segment',
      seq: 0,
      attemptNumber,
      payload: { lines, engine: reading.engine },
    },
    recognized,
  };
}
