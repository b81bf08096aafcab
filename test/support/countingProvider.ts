import type {
  AudioEngine,
  CallContext,
  ImageEngine,
  LineBox,
  MediaInput,
} from '../../core/provider';

/** Wraps a provider and counts calls per operation and segment, for resume assertions. */
export class CountingProvider implements ImageEngine, AudioEngine {
  readonly calls: Array<{ op: string; jobId: string; attempt: number; segment: number }> = [];
  readonly name: string;

  constructor(private readonly inner: ImageEngine & AudioEngine) {
    this.name = inner.name;
  }

  private note(op: string, ctx: CallContext) {
    this.calls.push({
      op,
      jobId: ctx.callKey.split(':')[0] ?? '',
      attempt: ctx.attemptNumber ?? 0,
      segment: ctx.segmentIndex ?? -1,
    });
  }

  recognizedCount(jobId: string, segment: number): number {
    return this.calls.filter(
      (c) => c.op === 'recognize' && c.jobId === jobId && c.segment === segment,
    ).length;
  }

  identity(model?: string) {
    return this.inner.identity(model);
  }
  segmentPage(image: MediaInput, ctx: CallContext) {
    this.note('segment', ctx);
    return this.inner.segmentPage(image, ctx);
  }
  /** P1: reads pages in one pass when the wrapped engine does, counted as `read`. */
  readsPages(ctx: CallContext) {
    return this.inner.readPage !== undefined && (this.inner.readsPages?.(ctx) ?? true);
  }
  readPage(image: MediaInput, ctx: CallContext) {
    this.note('read', ctx);
    if (!this.inner.readPage) throw new Error(`${this.name} does not read pages`);
    return this.inner.readPage(image, ctx);
  }
  recognizeLine(image: MediaInput, line: LineBox, ctx: CallContext) {
    this.note('recognize', ctx);
    return this.inner.recognizeLine(image, line, ctx);
  }
  submitAudio(audio: MediaInput, ctx: CallContext) {
    this.note('submit', ctx);
    return this.inner.submitAudio(audio, ctx);
  }
  pollAudio(id: string, ctx: CallContext) {
    this.note('poll', ctx);
    return this.inner.pollAudio(id, ctx);
  }
  deleteAudio(id: string, ctx: CallContext) {
    this.note('delete', ctx);
    return this.inner.deleteAudio(id, ctx);
  }
  polish(text: string, kind: 'image' | 'audio', ctx: CallContext) {
    this.note('polish', ctx);
    return this.inner.polish(text, kind, ctx);
  }
}

/**
 * D7 outage drills: a counting engine that runs `afterRead` after each page read, before the
 * read is handed back to be saved, so a test can cut a dependency at that moment.
 */
export class GatedEngine extends CountingProvider {
  afterRead: () => Promise<void> = async () => {};
  override async readPage(image: MediaInput, ctx: CallContext) {
    const reading = await super.readPage(image, ctx);
    await this.afterRead();
    return reading;
  }
}
