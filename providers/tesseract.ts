/**
 * The offline OCR engine (Q2): tesseract.js (WebAssembly tesseract, LSTM only, OEM 1) with
 * the English `4.0.0_best_int` model shipped by the npm package `@tesseract.js-data/eng`.
 *
 * Language data is always read from a local directory with the cache off: without a local
 * `langPath` tesseract.js downloads from a CDN (and a failed download kills the process),
 * and with its default cache it writes `<lang>.traineddata` into the working directory.
 *
 * P2: up to `threads` engine workers (worker threads; default one per core), each created on
 * first use for a data directory and reused; a call takes an idle one, and calls beyond
 * `threads` wait their turn. `close()` ends them all.
 */

import { randomUUID } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { imageSize } from 'image-size';
import { createWorker, OEM, PSM, type RecognizeResult, type Worker } from 'tesseract.js';
import UTIF from 'utif2';
import type { Box } from '../core/annotation';
import { ProviderError } from '../core/failures';
import type { MediaKind } from '../core/media';
import type {
  CallContext,
  CallCost,
  EngineIdentity,
  ImageEngine,
  LineBox,
  MediaInput,
  PageReading,
  ReadLine,
} from '../core/provider';
import { EnginePool, type EnginePoolStats } from './enginePool';
import { abortable, tesseractLanguages, throwIfAborted } from './engineSupport';
import { systemTessdataDir } from './installedModels';
import { offlinePolish } from './polish';

const require = createRequire(import.meta.url);

/** The bundled English model: LSTM only, integer-quantised "best" weights. */
export const BUNDLED_MODEL = '4.0.0_best_int';

export function bundledLanguageDir(): string {
  return path.join(
    path.dirname(require.resolve('@tesseract.js-data/eng/package.json')),
    BUNDLED_MODEL,
  );
}

function tesseractJsVersion(): string {
  try {
    return (require('tesseract.js/package.json') as { version: string }).version;
  } catch {
    return 'unknown';
  }
}

export interface TesseractProviderOptions {
  /**
   * Directory of extra `<lang>.traineddata` files (for example `frk`, `deu`), uncompressed
   * as tessdata ships them (config `QUIRE_TESSDATA_DIR`). A language found there is
   * read from there; `eng` otherwise comes from the bundled package.
   */
  tessdataDir?: string;
  /** Margin added around a line box before recognition, in pixels; default 15% of the box height, at least 4. */
  lineMargin?: number;
  /** How long creating an engine worker may take before the call fails `internal`; default 60 s. */
  startTimeoutMs?: number;
  /** P2: engine workers that may run at once (config `QUIRE_ENGINE_THREADS`); default 1. */
  threads?: number;
  /** Slots shared with another engine of the same process (the native engine's line path). */
  pool?: EnginePool;
}

export interface DataSource {
  key: string;
  langPath: string;
  gzip: boolean;
}

interface Engine {
  source: DataSource;
  worker: Promise<Worker>;
  /** The language set the tesseract API is initialised with. */
  languages: string;
  /** One call at a time: re-initialising a language and recognising are not atomic otherwise. */
  busy: boolean;
  /** Rejects when the worker thread dies, so calls in flight fail instead of hanging. */
  died: Promise<never>;
  dead: boolean;
  /** Marks the engine dead and fails the calls waiting on it. */
  stop: (reason: string) => void;
}

/** A decoded image: the bytes tesseract reads, and its size. */
interface PreparedImage {
  bytes: Buffer;
  width: number;
  height: number;
  /** Set when we decoded the pixels ourselves (TIFF): grey levels, row-major. */
  grey?: Uint8Array;
}

const TIFF_LE = [0x49, 0x49, 0x2a, 0x00];
const TIFF_BE = [0x4d, 0x4d, 0x00, 0x2a];

function startsWith(bytes: Uint8Array, magic: readonly number[]): boolean {
  return magic.every((b, i) => bytes[i] === b);
}

/** Binary PGM (P5): a format tesseract's leptonica always reads, made without a native library. */
export function encodePgm(grey: Uint8Array, width: number, height: number): Buffer {
  const header = Buffer.from(`P5\n${width} ${height}\n255\n`, 'ascii');
  return Buffer.concat([header, grey.subarray(0, width * height)]);
}

/**
 * Decodes the first image of a TIFF to grey levels. tesseract.js' own TIFF reader lacks
 * the Deflate codec (scans and the Fraktur ground-truth lines use it), so TIFF is decoded in
 * pure JS (utif2) and handed over as PGM.
 */
function decodeTiff(bytes: Buffer): PreparedImage {
  const buffer = bytes.buffer.slice(
    bytes.byteOffset,
    bytes.byteOffset + bytes.byteLength,
  ) as ArrayBuffer;
  const ifds = UTIF.decode(buffer);
  const ifd = ifds[0];
  if (!ifd) throw new Error('no image in TIFF');
  UTIF.decodeImage(buffer, ifd);
  const { width, height } = ifd;
  if (!(width > 0 && height > 0)) throw new Error('empty TIFF');
  const rgba = UTIF.toRGBA8(ifd);
  const grey = new Uint8Array(width * height);
  for (let i = 0; i < width * height; i++) {
    const a = rgba[4 * i + 3]! / 255;
    const luma = 0.299 * rgba[4 * i]! + 0.587 * rgba[4 * i + 1]! + 0.114 * rgba[4 * i + 2]!;
    // Transparent parts read as white paper.
    grey[i] = Math.round(luma * a + 255 * (1 - a));
  }
  return { bytes: encodePgm(grey, width, height), width, height, grey };
}

function cropGrey(image: PreparedImage & { grey: Uint8Array }, box: Box): Buffer {
  const out = new Uint8Array(box.w * box.h);
  for (let row = 0; row < box.h; row++) {
    const from = (box.y + row) * image.width + box.x;
    out.set(image.grey.subarray(from, from + box.w), row * box.w);
  }
  return encodePgm(out, box.w, box.h);
}

async function prepareImage(media: MediaInput): Promise<PreparedImage> {
  let bytes: Buffer;
  try {
    bytes = await readFile(media.path);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'EIO';
    // The stored blob could not be read: not the image's fault, so a later attempt may succeed.
    throw new ProviderError('internal', `image file could not be read (${code})`);
  }
  try {
    if (startsWith(bytes, TIFF_LE) || startsWith(bytes, TIFF_BE)) return decodeTiff(bytes);
    const size = imageSize(bytes);
    if (!size.width || !size.height) throw new Error('no size');
    return { bytes, width: size.width, height: size.height };
  } catch {
    throw new ProviderError(
      'image',
      `unreadable or unsupported image (${media.mediaType || 'unknown type'})`,
    );
  }
}

function toBox(bbox: { x0: number; y0: number; x1: number; y1: number }): Box {
  return {
    x: bbox.x0,
    y: bbox.y0,
    w: Math.max(0, bbox.x1 - bbox.x0),
    h: Math.max(0, bbox.y1 - bbox.y0),
  };
}

function clampBox(box: Box, width: number, height: number): Box {
  const x = Math.max(0, Math.min(Math.floor(box.x), width - 1));
  const y = Math.max(0, Math.min(Math.floor(box.y), height - 1));
  const right = Math.max(x + 1, Math.min(Math.ceil(box.x + box.w), width));
  const bottom = Math.max(y + 1, Math.min(Math.ceil(box.y + box.h), height));
  return { x, y, w: right - x, h: bottom - y };
}

/** Turns tesseract's rejection (a string or Error) into a classified failure without its text. */
function engineFailure(error: unknown, what: string): ProviderError {
  if (error instanceof ProviderError) return error;
  const message = String(error instanceof Error ? error.message : error);
  if (/read image|pixRead|Unknown format|too small/i.test(message)) {
    return new ProviderError('image', `tesseract could not read the image for ${what}`);
  }
  return new ProviderError('internal', `tesseract failed during ${what}`);
}

type TesseractParams = Record<string, string>;

export class TesseractProvider implements ImageEngine {
  readonly name = 'tesseract';
  private readonly tessdataDir: string | undefined;
  private readonly lineMargin: number | undefined;
  private readonly startTimeoutMs: number;
  private readonly engines = new Map<string, Engine[]>();
  private readonly pool: EnginePool;
  /** tesseract.js never writes here with the cache off; set so a default could not hit the cwd. */
  private readonly cachePath = path.join(os.tmpdir(), `quire-tesseract-cache-${randomUUID()}`);

  constructor(options: TesseractProviderOptions = {}) {
    const dir = options.tessdataDir;
    this.tessdataDir = dir && dir.trim() !== '' ? path.resolve(dir) : undefined;
    this.lineMargin = options.lineMargin;
    this.startTimeoutMs = options.startTimeoutMs ?? 60_000;
    this.pool = options.pool ?? new EnginePool(options.threads ?? 1);
  }

  /** P2: how many engine workers are busy and waited for. */
  poolStats(): EnginePoolStats {
    return this.pool.stats();
  }

  identity(model?: string): EngineIdentity {
    return {
      engine: 'tesseract.js',
      model: model ?? `tessdata-${BUNDLED_MODEL}`,
      version: tesseractJsVersion(),
    };
  }

  async segmentPage(
    image: MediaInput,
    ctx: CallContext,
  ): Promise<{ lines: LineBox[]; cost: CallCost }> {
    throwIfAborted(ctx.signal);
    const prepared = await prepareImage(image);
    // Full recognition (not layout analysis alone): it drops noise the layout pass keeps
    // and gives each line a confidence. The text itself is not kept here.
    const result = await this.run(ctx, 'page segmentation', (worker) =>
      worker.recognize(prepared.bytes, { tessedit_pageseg_mode: PSM.AUTO } as TesseractParams, {
        blocks: true,
        text: false,
      }),
    );
    const lines: LineBox[] = [];
    for (const block of result.data.blocks ?? []) {
      for (const paragraph of block.paragraphs) {
        for (const line of paragraph.lines) {
          const box = toBox(line.bbox);
          if (line.text.trim() === '' || box.w === 0 || box.h === 0) continue;
          lines.push({ box, confidence: clamp01(line.confidence / 100) });
        }
      }
    }
    return { lines, cost: { units: 1, unit: 'page' } };
  }

  /** P1: the whole page in one recognition: every line with its box, text and confidence. */
  async readPage(image: MediaInput, ctx: CallContext): Promise<PageReading> {
    throwIfAborted(ctx.signal);
    const prepared = await prepareImage(image);
    const result = await this.run(ctx, 'page reading', (worker) =>
      worker.recognize(prepared.bytes, { tessedit_pageseg_mode: PSM.AUTO } as TesseractParams, {
        blocks: true,
        text: false,
      }),
    );
    const lines: ReadLine[] = [];
    for (const block of result.data.blocks ?? []) {
      for (const paragraph of block.paragraphs) {
        for (const line of paragraph.lines) {
          const box = toBox(line.bbox);
          const text = line.text.replace(/\s+/g, ' ').trim();
          // What tesseract found but read nothing in is noise, as in `segmentPage`.
          if (text === '' || box.w === 0 || box.h === 0) continue;
          lines.push({ box, text, confidence: clamp01(line.confidence / 100) });
        }
      }
    }
    return { lines, cost: { units: 1, unit: 'page' } };
  }

  async recognizeLine(
    image: MediaInput,
    line: LineBox,
    ctx: CallContext,
  ): Promise<{ text: string; confidence?: number; cost: CallCost }> {
    throwIfAborted(ctx.signal);
    const prepared = await prepareImage(image);
    const margin = this.lineMargin ?? Math.max(4, Math.round(line.box.h * 0.15));
    const box = clampBox(
      {
        x: line.box.x - margin,
        y: line.box.y - margin,
        w: line.box.w + 2 * margin,
        h: line.box.h + 2 * margin,
      },
      prepared.width,
      prepared.height,
    );
    const params: TesseractParams = { tessedit_pageseg_mode: PSM.SINGLE_LINE };
    const result = await this.run(ctx, 'line recognition', (worker) => {
      if (prepared.grey) {
        // We hold the pixels: send only the line, not the whole page again.
        return worker.recognize(cropGrey({ ...prepared, grey: prepared.grey }, box), params, {
          text: true,
        });
      }
      return worker.recognize(
        prepared.bytes,
        { ...params, rectangle: { left: box.x, top: box.y, width: box.w, height: box.h } },
        { text: true },
      );
    });
    const text = result.data.text.replace(/\s+/g, ' ').trim();
    return {
      text,
      confidence: clamp01(result.data.confidence / 100),
      cost: { units: 1, unit: 'line' },
    };
  }

  polish(
    text: string,
    kind: MediaKind,
    ctx: CallContext,
  ): Promise<{ text: string; cost: CallCost }> {
    return offlinePolish(text, kind, ctx.signal);
  }

  /** Ends every engine worker. The provider may still be used: the next call starts a new one. */
  async close(): Promise<void> {
    const engines = [...this.engines.values()].flat();
    this.engines.clear();
    await Promise.all(
      engines.map(async (engine) => {
        engine.stop('tesseract engine closed');
        try {
          const worker = await engine.worker;
          await worker.terminate();
        } catch {
          // A worker that never started has nothing to end.
        }
      }),
    );
  }

  private resolveSource(languages: string[]): Promise<DataSource> {
    return resolveTessdata(languages, this.tessdataDir);
  }

  private startEngine(source: DataSource, languages: string): Engine {
    let markDead: (error: ProviderError) => void = () => {};
    const died = new Promise<never>((_resolve, reject) => {
      markDead = reject;
    });
    // Nobody may be waiting when it dies; the rejection is still observed by later calls.
    died.catch(() => {});
    const engine: Engine = {
      source,
      languages,
      busy: false,
      died,
      dead: false,
      worker: Promise.resolve() as never,
      stop: (reason) => {
        if (engine.dead) return;
        engine.dead = true;
        this.forget(engine);
        markDead(new ProviderError('internal', reason));
      },
    };
    const onDeath = () => engine.stop('tesseract engine worker stopped');
    const starting = createWorker(languages, OEM.LSTM_ONLY, {
      langPath: source.langPath,
      gzip: source.gzip,
      cacheMethod: 'none',
      cachePath: this.cachePath,
      logger: () => {},
      // Without a handler tesseract.js rethrows every engine error inside a message
      // listener, which crashes the process; with one, only the call's promise rejects.
      errorHandler: () => {},
    }).then((worker) => {
      const thread = (worker as unknown as { worker?: NodeJS.EventEmitter }).worker;
      thread?.on('error', onDeath);
      thread?.on('exit', onDeath);
      // Started after its deadline or after close(): nobody will use it.
      if (engine.dead) void worker.terminate();
      return worker;
    });
    engine.worker = withTimeout(starting, this.startTimeoutMs, () => {
      onDeath();
      return new ProviderError('internal', 'tesseract engine did not start in time');
    });
    engine.worker.catch(() => onDeath());
    return engine;
  }

  private forget(engine: Engine): void {
    const list = this.engines.get(engine.source.key);
    if (!list) return;
    const rest = list.filter((e) => e !== engine);
    if (rest.length > 0) this.engines.set(engine.source.key, rest);
    else this.engines.delete(engine.source.key);
  }

  /**
   * An idle engine of this data directory, started when none is. Called inside a pool slot:
   * at most `threads` calls hold one, so an idle engine or room for one always exists.
   */
  private idleEngine(source: DataSource, languages: string): Engine {
    const list = this.engines.get(source.key) ?? [];
    const idle =
      list.find((e) => !e.busy && !e.dead && e.languages === languages) ??
      list.find((e) => !e.busy && !e.dead);
    if (idle) return idle;
    const engine = this.startEngine(source, languages);
    this.engines.set(source.key, [...list, engine]);
    return engine;
  }

  /** Runs one call on an idle engine for the context's language, in a pool slot (P2). */
  private async run(
    ctx: CallContext,
    what: string,
    call: (worker: Worker) => Promise<RecognizeResult>,
  ): Promise<RecognizeResult> {
    const languages = tesseractLanguages(ctx.language);
    if (!languages) throw new ProviderError('invalid', 'unsupported language code for tesseract');
    const source = await this.resolveSource(languages);
    const wanted = languages.join('+');
    const inSlot = async (): Promise<RecognizeResult> => {
      throwIfAborted(ctx.signal);
      const engine = this.idleEngine(source, wanted);
      engine.busy = true;
      try {
        return await Promise.race([this.callOn(engine, wanted, call), engine.died]);
      } finally {
        engine.busy = false;
      }
    };
    try {
      return await abortable(
        this.pool.run(ctx.signal, inSlot, { first: ctx.interactive }),
        ctx.signal,
      );
    } catch (error) {
      if (ctx.signal.aborted) throw error;
      throw engineFailure(error, what);
    }
  }

  private async callOn(
    engine: Engine,
    wanted: string,
    call: (worker: Worker) => Promise<RecognizeResult>,
  ): Promise<RecognizeResult> {
    const worker = await engine.worker;
    if (engine.languages !== wanted) {
      try {
        await worker.reinitialize(wanted, OEM.LSTM_ONLY);
      } catch {
        // The API is left uninitialised: end this engine so the next call starts clean.
        engine.dead = true;
        this.forget(engine);
        void worker.terminate();
        throw new ProviderError('invalid', `tesseract could not load language data for ${wanted}`);
      }
      engine.languages = wanted;
    }
    return call(worker);
  }
}

/**
 * Where each language's traineddata is: the configured directory first, then the bundled
 * English model, then the machine's own tessdata directory (V9: Debian's `tesseract-ocr-frk`
 * is found without configuration); or an `invalid` failure naming what is missing. Both
 * tesseract engines use it.
 */
export async function resolveTessdata(
  languages: string[],
  tessdataDir: string | undefined,
  systemDir: string | undefined = systemTessdataDir(),
): Promise<DataSource> {
  const sources = new Set<string>();
  for (const lang of languages) {
    if (tessdataDir && (await isFile(path.join(tessdataDir, `${lang}.traineddata`)))) {
      sources.add('dir');
    } else if (await isFile(path.join(bundledLanguageDir(), `${lang}.traineddata.gz`))) {
      sources.add('bundled');
    } else if (systemDir && (await isFile(path.join(systemDir, `${lang}.traineddata`)))) {
      sources.add('system');
    } else {
      const where = tessdataDir
        ? `add ${lang}.traineddata to the tessdata directory`
        : `set QUIRE_TESSDATA_DIR to a directory holding ${lang}.traineddata`;
      throw new ProviderError('invalid', `tesseract language '${lang}' is not installed: ${where}`);
    }
  }
  if (sources.size > 1) {
    throw new ProviderError(
      'invalid',
      `tesseract languages ${languages.join('+')} come from two data directories: put all of them in the tessdata directory`,
    );
  }
  if (sources.has('dir') && tessdataDir) {
    return { key: `dir:${tessdataDir}`, langPath: tessdataDir, gzip: false };
  }
  if (sources.has('system') && systemDir) {
    return { key: `dir:${systemDir}`, langPath: systemDir, gzip: false };
  }
  return { key: 'bundled', langPath: bundledLanguageDir(), gzip: true };
}

export function clamp01(n: number): number {
  if (!Number.isFinite(n)) return 0;
  return Math.min(1, Math.max(0, n));
}

export async function isFile(file: string): Promise<boolean> {
  try {
    return (await stat(file)).isFile();
  } catch {
    return false;
  }
}

function withTimeout<T>(work: Promise<T>, ms: number, onTimeout: () => Error): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(onTimeout()), ms);
    timer.unref?.();
    work.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}
