import { createHash, randomUUID } from 'node:crypto';
import { appendFileSync } from 'node:fs';
import { sleepUnlessAborted } from '../core/abort';
import type { Segment } from '../core/annotation';
import { type FailureClass, isFailureClass, isPausing, ProviderError } from '../core/failures';
import type { MediaKind } from '../core/media';
import type {
  AudioEngine,
  AudioPoll,
  CallContext,
  EngineIdentity,
  ImageEngine,
  LineBox,
  MediaInput,
  PageReading,
  ReadLine,
} from '../core/provider';

/**
 * A simulated engine with fault injection (Q2), for tests, chaos runs and benchmarks; never
 * a substitute for the real engines. Everything is deterministic by seed: whether a call
 * fails depends only on the seed, the operation, the attempt and the segment.
 *
 * Options come from the job's snapshot (`options.simulated`) over the constructor defaults:
 * - `lines`: lines a page has (default 8); `audioSegments`: spans a recording has (default 4)
 * - `latencyMs`: per call (default 0); `audioLatencyMs`: submit to done (default 0)
 * - `readPages`: reads fresh pages in one pass (P1), taking `latencyMs` per line; a charged
 *   `recognize` fault on a line makes that line come back empty, a pausing one fails the pass
 * - `faults`: `[{op, category, rate?, segments?, attempts?, retryAfterMs?}]`
 */
export type SimulatedOp = 'segment' | 'read' | 'recognize' | 'submit' | 'poll' | 'polish';

export interface SimulatedFault {
  op: SimulatedOp | 'any';
  category: FailureClass;
  /** Probability in [0, 1] (default 1), decided by a hash of seed and call. */
  rate?: number;
  /** Only these segment indexes. */
  segments?: number[];
  /** Only these attempt numbers. */
  attempts?: number[];
  retryAfterMs?: number;
}

export interface SimulatedOptions {
  seed?: string;
  lines?: number;
  audioSegments?: number;
  latencyMs?: number;
  audioLatencyMs?: number;
  faults?: SimulatedFault[];
  /** P1: read fresh pages in one pass instead of segmenting them and reading line by line. */
  readPages?: boolean;
  /** A file to append one line per call to (`op attempt segment`), for chaos tests. */
  callLog?: string;
}

export class SimulatedProvider implements ImageEngine, AudioEngine {
  readonly name: string;
  private readonly deleted = new Set<string>();

  constructor(
    private readonly defaults: SimulatedOptions = {},
    name = 'simulated',
  ) {
    this.name = name;
  }

  identity(model?: string): EngineIdentity {
    return { engine: this.name, model: model ?? 'sim-1', version: '1.0.0' };
  }

  async segmentPage(_image: MediaInput, ctx: CallContext) {
    const options = this.options(ctx);
    await this.call('segment', ctx, options);
    const lines: LineBox[] = [];
    for (let i = 0; i < (options.lines ?? 8); i++) {
      lines.push({ box: { x: 100, y: 120 + i * 60, w: 1600, h: 48 }, confidence: 0.9 });
    }
    return { lines, cost: { units: 1, unit: 'page' as const } };
  }

  readsPages(ctx: CallContext): boolean {
    return this.options(ctx).readPages === true;
  }

  /** P1: the page's lines with their text in one call, at `latencyMs` per line. */
  async readPage(_image: MediaInput, ctx: CallContext): Promise<PageReading> {
    const options = this.options(ctx);
    const count = options.lines ?? 8;
    await this.call('read', ctx, { ...options, latencyMs: (options.latencyMs ?? 0) * count });
    const lines: ReadLine[] = [];
    for (let i = 0; i < count; i++) {
      let text = simulatedText(options.seed ?? 'quire', i);
      try {
        await this.call(
          'recognize',
          { ...ctx, segmentIndex: i },
          { ...options, latencyMs: 0 },
          false,
        );
      } catch (error) {
        // A pause stops the whole pass; any other failure is one line read empty (J2).
        if (error instanceof ProviderError && isPausing(error.category)) throw error;
        text = '';
      }
      lines.push({ box: { x: 100, y: 120 + i * 60, w: 1600, h: 48 }, text, confidence: 0.87 });
    }
    return { lines, cost: { units: 1, unit: 'page' as const } };
  }

  async recognizeLine(_image: MediaInput, _line: LineBox, ctx: CallContext) {
    const options = this.options(ctx);
    await this.call('recognize', ctx, options);
    return {
      text: simulatedText(options.seed ?? 'quire', ctx.segmentIndex ?? 0),
      confidence: 0.87,
      cost: { units: 1, unit: 'line' as const },
    };
  }

  async submitAudio(_audio: MediaInput, ctx: CallContext) {
    const options = this.options(ctx);
    await this.call('submit', ctx, options);
    // The id carries everything a poll needs, so any worker process can answer it.
    const readyAt = Date.now() + (options.audioLatencyMs ?? 0);
    const engineJobId = `sim-${readyAt}-${options.audioSegments ?? 4}-${randomUUID()}`;
    return { engineJobId, cost: { units: 1, unit: 'call' as const } };
  }

  async pollAudio(engineJobId: string, ctx: CallContext): Promise<AudioPoll> {
    const options = this.options(ctx);
    await this.call('poll', ctx, options);
    const match = /^sim-(\d+)-(\d+)-/.exec(engineJobId);
    if (!match || this.deleted.has(engineJobId)) {
      throw new ProviderError('invalid', 'unknown engine job');
    }
    const readyAt = Number(match[1]);
    const count = Number(match[2]);
    if (Date.now() < readyAt) return { state: 'running', progress: 0.5 };
    const segments: Segment[] = [];
    for (let i = 0; i < count; i++) {
      segments.push({
        index: i,
        target: { kind: 't', start: i * 2.5, end: i * 2.5 + 2.2 },
        text: simulatedText(options.seed ?? 'quire', i),
        speaker: i % 2 === 0 ? 'A' : 'B',
      });
    }
    return { state: 'done', segments, cost: { units: count * 2.5, unit: 'audio_second' } };
  }

  async deleteAudio(engineJobId: string): Promise<void> {
    this.deleted.add(engineJobId);
  }

  async polish(text: string, _kind: MediaKind, ctx: CallContext) {
    const options = this.options(ctx);
    await this.call('polish', ctx, options);
    const polished = text
      .split('\n')
      .map((line) => (line ? `${line.charAt(0).toUpperCase()}${line.slice(1)}.` : line))
      .join('\n');
    return { text: polished, cost: { units: 1, unit: 'call' as const } };
  }

  private options(ctx: CallContext): SimulatedOptions {
    const fromJob = (ctx.options.simulated ?? {}) as SimulatedOptions;
    return { ...this.defaults, ...fromJob };
  }

  private async call(
    op: SimulatedOp,
    ctx: CallContext,
    options: SimulatedOptions,
    logged = true,
  ): Promise<void> {
    if (logged && this.defaults.callLog) {
      appendFileSync(
        this.defaults.callLog,
        `${op} ${ctx.callKey.split(':')[0]} ${ctx.attemptNumber ?? 0} ${ctx.segmentIndex ?? -1}\n`,
      );
    }
    if (options.latencyMs) await sleep(options.latencyMs, ctx.signal);
    if (ctx.signal.aborted) throw new ProviderError('timeout', 'call aborted');
    for (const fault of options.faults ?? []) {
      if (fault.op !== 'any' && fault.op !== op) continue;
      if (!isFailureClass(fault.category)) continue;
      if (fault.segments && !fault.segments.includes(ctx.segmentIndex ?? -1)) continue;
      if (fault.attempts && !fault.attempts.includes(ctx.attemptNumber ?? 0)) continue;
      const rate = fault.rate ?? 1;
      const key = `${options.seed ?? 'quire'}|${op}|${ctx.attemptNumber ?? 0}|${ctx.segmentIndex ?? -1}|${fault.category}`;
      if (rate >= 1 || unitHash(key) < rate) {
        throw new ProviderError(
          fault.category,
          `simulated ${fault.category} on ${op}`,
          fault.retryAfterMs,
        );
      }
    }
  }
}

const WORDS = [
  'ledger',
  'parish',
  'harvest',
  'letter',
  'river',
  'council',
  'winter',
  'mill',
  'road',
  'widow',
  'grain',
];

/** Lower-case text without final punctuation, so a polish pass is visible in tests (J3). */
export function simulatedText(seed: string, index: number): string {
  const h = createHash('sha256').update(`${seed}:${index}`).digest();
  const words = [0, 1, 2, 3].map((i) => WORDS[(h[i] ?? 0) % WORDS.length]);
  return `line ${index + 1} ${words.join(' ')}`;
}

function unitHash(key: string): number {
  return createHash('sha256').update(key).digest().readUInt32BE(0) / 0x1_0000_0000;
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return sleepUnlessAborted(ms, signal, () => new ProviderError('timeout', 'call aborted'));
}
