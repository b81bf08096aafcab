/**
 * The provider interfaces (Q1): every engine, real, simulated or remote, is reached only
 * through them. An engine implements the interface of each media kind it reads (`ImageEngine`,
 * `AudioEngine`, or both), as the catalogue (core/providerCatalogue.ts) describes it. Each call
 * returns a result with its cost, or throws a `ProviderError` carrying one failure class
 * (core/failures.ts).
 */

import type { Box, Segment } from './annotation';
import { ProviderError } from './failures';
import type { MediaKind } from './media';

export type CostUnit = 'line' | 'page' | 'audio_second' | 'call' | 'token';

/** Prices per unit (B1), in micro-units of the workspace currency. */
export type PriceTable = Partial<Record<CostUnit, number>>;

export interface CallCost {
  units: number;
  unit: CostUnit;
}

export interface EngineIdentity {
  engine: string;
  model: string;
  version: string;
}

export interface CallContext {
  /** Aborted when the activity is cancelled or its worker shuts down. */
  signal: AbortSignal;
  language: string;
  model?: string;
  options: Record<string, unknown>;
  /** Distinguishes calls for deterministic fault injection; never sent to a remote engine. */
  callKey: string;
  /** The Quire attempt making the call (1-based), for fault injection and logs. */
  attemptNumber?: number;
  /** The segment this call is about, when it is about one. */
  segmentIndex?: number;
  /** P8: a page a person waits for; an engine pool lets it ahead of bulk calls waiting. */
  interactive?: boolean;
}

/** A stored image or recording, readable from the local filesystem. */
export interface MediaInput {
  path: string;
  mediaType: string;
}

export interface LineBox {
  box: Box;
  confidence?: number;
}

/** One line of a page read in one pass (P1): its box, its text and the engine's confidence. */
export interface ReadLine extends LineBox {
  /** Empty when the engine found the line but read nothing in it: a failed line (J2). */
  text: string;
}

/** A whole page read in one pass (P1): every line, in reading order. */
export interface PageReading {
  lines: ReadLine[];
  cost: CallCost;
  /** The engine that read it, when it differs from `identity()` (provenance of the commit). */
  engine?: EngineIdentity;
}

export type AudioPoll =
  | { state: 'running'; progress?: number }
  | { state: 'done'; segments: Segment[]; cost: CallCost };

/**
 * What every engine answers, whatever media it reads: who it is, and the polish (T2), which
 * works on text. A provider named only to polish (`options.polishProvider`) is this alone.
 */
export interface TranscriptionProvider {
  readonly name: string;
  identity(model?: string): EngineIdentity;
  /** Polishes raw text (T2 `polish`). */
  polish(
    text: string,
    kind: MediaKind,
    ctx: CallContext,
  ): Promise<{ text: string; cost: CallCost }>;
  /**
   * Starts, when the worker starts, what the engine's first call would otherwise wait for
   * (a helper process), so a person's first page on a fresh worker does not. Never throws.
   */
  warm?(): void;
  /** Releases what the engine holds (worker threads) when the worker stops. */
  close?(): Promise<void>;
}

/** An engine that reads page images. */
export interface ImageEngine extends TranscriptionProvider {
  /** Finds the lines of a page image (T2 `segment`). */
  segmentPage(image: MediaInput, ctx: CallContext): Promise<{ lines: LineBox[]; cost: CallCost }>;
  /**
   * P1: reads a whole page in one pass (lines with boxes, text, confidence), for engines that
   * read pages. Used for a page without lines when `readsPages(ctx)` says so; pages whose
   * boxes exist are still read line by line.
   */
  readPage?(image: MediaInput, ctx: CallContext): Promise<PageReading>;
  /** Whether `readPage` serves this call's job (default: whenever `readPage` exists). */
  readsPages?(ctx: CallContext): boolean;
  /** Recognizes one line of a page image (T2 `recognize`). */
  recognizeLine(
    image: MediaInput,
    line: LineBox,
    ctx: CallContext,
  ): Promise<{ text: string; confidence?: number; cost: CallCost }>;
}

/** An engine that transcribes recordings, as jobs of its own that it holds until deleted. */
export interface AudioEngine extends TranscriptionProvider {
  /** Hands a recording to the engine; the returned id must be saved before our copy may go. */
  submitAudio(
    audio: MediaInput,
    ctx: CallContext,
  ): Promise<{ engineJobId: string; cost: CallCost }>;
  pollAudio(engineJobId: string, ctx: CallContext): Promise<AudioPoll>;
  /** Deletes the engine's copy; idempotent. */
  deleteAudio(engineJobId: string, ctx: CallContext): Promise<void>;
}

/** Whether the engine implements reading page images. */
export function isImageEngine(engine: TranscriptionProvider): engine is ImageEngine {
  const image = engine as Partial<ImageEngine>;
  return typeof image.segmentPage === 'function' && typeof image.recognizeLine === 'function';
}

/** Whether the engine implements transcribing recordings. */
export function isAudioEngine(engine: TranscriptionProvider): engine is AudioEngine {
  const audio = engine as Partial<AudioEngine>;
  return (
    typeof audio.submitAudio === 'function' &&
    typeof audio.pollAudio === 'function' &&
    typeof audio.deleteAudio === 'function'
  );
}

/**
 * Q1: the one refusal of a call for media the engine does not read. A permanent `invalid`
 * failure: no later attempt of the job can succeed with the same engine.
 */
export class MediaKindRefusedError extends ProviderError {
  constructor(
    readonly provider: string,
    readonly kind: MediaKind,
  ) {
    super('invalid', `this provider does not transcribe ${kind === 'image' ? 'images' : 'audio'}`);
  }
}

/** The immutable context snapshot of a job (SPEC §3). */
export interface JobSnapshot {
  provider: string;
  model: string;
  language: string;
  options: Record<string, unknown>;
  /** Price per unit in micro-units of the workspace currency. */
  price: PriceTable;
  /**
   * M3: the price of the provider `options.polishProvider` names, fixed at creation like the
   * main price; polish calls are priced and recorded under that provider. Absent when the
   * job polishes with its own engine (and in snapshots made before it existed).
   */
  polishPrice?: PriceTable;
}
