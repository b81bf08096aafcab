/**
 * The native OCR engine (P3): Debian's `tesseract` binary (package `tesseract-ocr`), one
 * process per page, each on one core (`OMP_THREAD_LIMIT=1`), at most `threads` at once (P2).
 * It reads a whole page in one pass (P1) and reports every line's box, text and confidence from
 * its TSV output.
 *
 * Model data is the same as tesseract.js': the English `4.0.0_best_int` model shipped by the
 * npm package `@tesseract.js-data/eng`, decompressed once into a cache directory (the binary
 * reads only uncompressed traineddata); other languages come from `QUIRE_TESSDATA_DIR`, e.g.
 * Debian's `tesseract-ocr-frk` in `/usr/share/tesseract-ocr/5/tessdata`. The image goes in on
 * stdin, so a file is never taken for the list of images tesseract also accepts. The processes
 * are started by the engine launcher (P6, `engineLauncher.ts`), a small process of the
 * worker's, so the worker itself is never forked.
 *
 * Lines of a page whose boxes already exist (a re-run on corrected boxes) are read one by one
 * through tesseract.js with the same model data and the same slots: one process per line would
 * load the model once per line.
 */

import { execFile, execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { accessSync, constants } from 'node:fs';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { DEFAULT_PROGRAM_PATH } from '../core/config';
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
import { BULK_NICENESS, EngineLauncher, LaunchError } from './engineLauncher';
import { EnginePool, type EnginePoolStats } from './enginePool';
import {
  findProgram,
  type ProcessResult,
  tesseractLanguages,
  throwIfAborted,
} from './engineSupport';
import {
  BUNDLED_MODEL,
  bundledLanguageDir,
  clamp01,
  isFile,
  resolveTessdata,
  TesseractProvider,
} from './tesseract';

export const TESSERACT_PROGRAM = 'tesseract';
export const TESSERACT_PACKAGE = 'tesseract-ocr';

export interface NativeTesseractOptions {
  /** Directory of extra `<lang>.traineddata` files (config `QUIRE_TESSDATA_DIR`). */
  tessdataDir?: string;
  /** P2: tesseract processes that may run at once (config `QUIRE_ENGINE_THREADS`); default 1. */
  threads?: number;
  /** Where to look for the binary (config `PATH`). */
  searchPath?: string;
  /** Where the bundled English model is decompressed; default under the system temp directory. */
  dataCacheDir?: string;
  /** Longest a page may take before the call fails `timeout`; default 10 minutes. */
  pageTimeoutMs?: number;
}

/** Whether the binary is on the search path: `auto` picks this engine when it is (P3). */
export function nativeTesseractAvailable(searchPath?: string): boolean {
  return findProgramSync(TESSERACT_PROGRAM, searchPath) !== undefined;
}

export class NativeTesseractProvider implements ImageEngine {
  readonly name = 'tesseract';
  private readonly tessdataDir: string | undefined;
  private readonly searchPath: string | undefined;
  private readonly dataCacheDir: string;
  private readonly pageTimeoutMs: number;
  private readonly pool: EnginePool;
  private readonly lines: TesseractProvider;
  private readonly launcher = new EngineLauncher();
  private bundledDir: Promise<string> | undefined;
  private version: string | undefined;
  private readingVersion = false;
  /** Where the binary was found: looked up again only once it fails to start (P6). */
  private program: string | undefined;

  constructor(options: NativeTesseractOptions = {}) {
    const dir = options.tessdataDir?.trim();
    this.tessdataDir = dir ? path.resolve(dir) : undefined;
    this.searchPath = options.searchPath;
    this.dataCacheDir =
      options.dataCacheDir ?? path.join(os.tmpdir(), `quire-tessdata-${BUNDLED_MODEL}`);
    this.pageTimeoutMs = options.pageTimeoutMs ?? 600_000;
    // P8: a person's page need not wait for a bulk page's slot: the bulk engine processes run
    // niced, so one started beside them takes the core (EnginePool's `roomForPeople`).
    this.pool = new EnginePool(options.threads ?? 1, { roomForPeople: true });
    this.lines = new TesseractProvider({ tessdataDir: this.tessdataDir, pool: this.pool });
  }

  identity(model?: string): EngineIdentity {
    return {
      engine: 'tesseract',
      model: model ?? `tessdata-${BUNDLED_MODEL}`,
      version: this.binaryVersion(),
    };
  }

  /** P2: how many tesseract processes (and line readers) are busy and waited for. */
  poolStats(): EnginePoolStats {
    return this.pool.stats();
  }

  /** P1: one tesseract process reads the page (automatic layout, LSTM only). */
  async readPage(image: MediaInput, ctx: CallContext): Promise<PageReading> {
    const tsv = await this.recognizePage(image, ctx);
    return { lines: parseTsvLines(tsv), cost: { units: 1, unit: 'page' } };
  }

  /** The page's lines without their text (the chat engine segments with this). */
  async segmentPage(
    image: MediaInput,
    ctx: CallContext,
  ): Promise<{ lines: LineBox[]; cost: CallCost }> {
    const read = await this.readPage(image, ctx);
    return {
      lines: read.lines.map(({ box, confidence }) => ({ box, confidence })),
      cost: read.cost,
    };
  }

  /** A line of a page whose boxes exist: tesseract.js, same model data, same slots. */
  recognizeLine(image: MediaInput, line: LineBox, ctx: CallContext) {
    return this.lines.recognizeLine(image, line, ctx);
  }

  /**
   * P6: the launcher is started with the worker, while the worker is small and idle, so the
   * first page (perhaps a person's) does not wait for a `node` to start; the binary is found
   * and its version read then too.
   */
  warm(): void {
    this.launcher.start();
    this.tesseractProgram().catch(() => {
      // Missing for now: the first page says so (`outage`), as it would have.
    });
  }

  /** The offline polish, as the line reader's. */
  polish(text: string, kind: MediaKind, ctx: CallContext) {
    return this.lines.polish(text, kind, ctx);
  }

  /**
   * At worker shutdown, after the drain: calls still waiting for a slot fail, processes still
   * running are killed, the line reader's workers end. The provider may be used again.
   */
  async close(): Promise<void> {
    this.pool.close(new ProviderError('internal', 'tesseract engine closed'));
    await this.launcher.close();
    await this.lines.close();
    this.pool.reopen();
  }

  /**
   * P6: the binary's version, read once while the first page is read, so that the page's
   * identity does not wait for a synchronous `--version` (60 ms of a blocked event loop).
   */
  private readVersion(program: string): void {
    if (this.version || this.readingVersion) return;
    this.readingVersion = true;
    execFile(program, ['--version'], { encoding: 'utf8', timeout: 10_000 }, (error, out) => {
      if (!error) this.version ??= versionIn(out);
      this.readingVersion = false;
    });
  }

  private binaryVersion(): string {
    if (this.version) return this.version;
    try {
      const program = this.program ?? findProgramSync(TESSERACT_PROGRAM, this.searchPath);
      if (!program) return 'unknown';
      const out = execFileSync(program, ['--version'], { encoding: 'utf8', timeout: 10_000 });
      this.version = versionIn(out) ?? 'unknown';
      return this.version;
    } catch {
      return 'unknown';
    }
  }

  private async recognizePage(image: MediaInput, ctx: CallContext): Promise<string> {
    throwIfAborted(ctx.signal);
    await this.tesseractProgram();
    const languages = tesseractLanguages(ctx.language);
    if (!languages) throw new ProviderError('invalid', 'unsupported language code for tesseract');
    const source = await resolveTessdata(languages, this.tessdataDir);
    const dataDir = source.gzip ? await this.bundledData() : source.langPath;
    const args = [
      'stdin',
      'stdout',
      '--tessdata-dir',
      dataDir,
      '-l',
      languages.join('+'),
      '--oem',
      '1',
      '--psm',
      '3',
      '-c',
      'tessedit_create_tsv=1',
      '-c',
      'tessedit_create_txt=0',
    ];
    const result = await this.pool.run(
      ctx.signal,
      async () => {
        try {
          return await this.runTesseract(
            await this.tesseractProgram(),
            args,
            image.path,
            ctx.signal,
            ctx.interactive === true,
          );
        } catch (error) {
          if (!(error instanceof ProgramGone)) throw error;
          // Moved or removed since it was found (a package upgrade): look again, once.
          this.program = undefined;
          const again = await this.tesseractProgram();
          return this.runTesseract(
            again,
            args,
            image.path,
            ctx.signal,
            ctx.interactive === true,
          ).catch((retried) => {
            throw retried instanceof ProgramGone ? retried.failure : retried;
          });
        }
      },
      { first: ctx.interactive },
    );
    if (result.code !== 0) {
      if (/pixRead|cannot be read|Unsupported image|Error in fopen/i.test(result.stderr)) {
        throw new ProviderError(
          'image',
          `unreadable or unsupported image (${image.mediaType || 'unknown type'})`,
        );
      }
      if (/Failed loading language|Could not initialize/i.test(result.stderr)) {
        throw new ProviderError(
          'invalid',
          `tesseract could not load language data for ${languages.join('+')}`,
        );
      }
      throw new ProviderError('internal', `tesseract exited with ${result.code ?? result.signal}`);
    }
    return result.stdout;
  }

  /**
   * The binary's path. P6: the search path is walked (an access call per directory) until the
   * binary is found, then not again for every page; while it is missing, on every page.
   */
  private async tesseractProgram(): Promise<string> {
    this.program ??= await findProgram(TESSERACT_PROGRAM, this.searchPath);
    if (this.program) {
      this.readVersion(this.program);
      return this.program;
    }
    // The engine is missing on this machine until an operator installs it: `outage` pauses
    // the queue instead of failing jobs, as for the speech engine's programs.
    throw new ProviderError(
      'outage',
      `missing ${TESSERACT_PROGRAM} (Debian package ${TESSERACT_PACKAGE}): install with apt-get install ${TESSERACT_PACKAGE}`,
    );
  }

  /**
   * Runs one tesseract process on one core through the launcher, the image file as its stdin;
   * killed when the call aborts or the page takes too long.
   */
  private async runTesseract(
    program: string,
    args: string[],
    image: string,
    signal: AbortSignal,
    interactive: boolean,
  ): Promise<ProcessResult> {
    throwIfAborted(signal);
    // A timer of our own: an `AbortSignal.timeout` held only by `AbortSignal.any` did not fire
    // here (a page given 0.5 s ran its 30 s), nothing else keeping that signal alive.
    const kill = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      kill.abort();
    }, this.pageTimeoutMs);
    timer.unref?.();
    const onAbort = () => kill.abort(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    try {
      return await this.launcher.run({
        program,
        args,
        input: image,
        // One core per process: the pool gives each page its own, which beats threads within
        // a page on a busy machine. No OMP or locale surprises from the caller's environment.
        env: { OMP_THREAD_LIMIT: '1', LC_ALL: 'C' },
        signal: kill.signal,
        nice: interactive ? 0 : BULK_NICENESS,
      });
    } catch (error) {
      if (signal.aborted) throw signal.reason ?? error;
      if (timedOut) throw new ProviderError('timeout', 'tesseract took too long on the page');
      if (error instanceof LaunchError && error.failed === 'input') {
        throw new ProviderError('internal', `image file could not be read (${error.code})`);
      }
      if (error instanceof LaunchError) {
        const failure = new ProviderError('internal', `tesseract could not start (${error.code})`);
        throw error.code === 'ENOENT' ? new ProgramGone(failure) : failure;
      }
      throw error;
    } finally {
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
    }
  }

  /** The bundled English model, decompressed once (written under a temporary name, then renamed). */
  private bundledData(): Promise<string> {
    this.bundledDir ??= (async () => {
      const target = path.join(this.dataCacheDir, 'eng.traineddata');
      if (!(await isFile(target))) {
        await mkdir(this.dataCacheDir, { recursive: true });
        const packed = await readFile(path.join(bundledLanguageDir(), 'eng.traineddata.gz'));
        const temporary = `${target}.${randomUUID()}.tmp`;
        await writeFile(temporary, gunzipSync(packed));
        await rename(temporary, target);
      }
      return this.dataCacheDir;
    })();
    this.bundledDir.catch(() => {
      this.bundledDir = undefined;
    });
    return this.bundledDir;
  }
}

/**
 * Lines from tesseract's TSV (level 4 = line with its box, level 5 = word with its confidence),
 * in the engine's reading order. A line whose words are all blank is noise (a rule, a speck)
 * and is left out, as the layout pass of tesseract.js leaves it out.
 */
export function parseTsvLines(tsv: string): ReadLine[] {
  const lines: Array<{ line: ReadLine; words: string[]; confs: number[] }> = [];
  const byKey = new Map<string, (typeof lines)[number]>();
  for (const row of tsv.split('\n')) {
    const cols = row.split('\t');
    if (cols.length < 12) continue;
    const level = Number(cols[0]);
    const key = `${cols[1]}.${cols[2]}.${cols[3]}.${cols[4]}`;
    const [left, top, width, height, conf] = [6, 7, 8, 9, 10].map((i) => Number(cols[i]));
    if (level === 4) {
      const entry = {
        line: { box: { x: left!, y: top!, w: width!, h: height! }, text: '' },
        words: [],
        confs: [],
      };
      byKey.set(key, entry);
      lines.push(entry);
    } else if (level === 5) {
      const entry = byKey.get(key);
      const word = cols.slice(11).join('\t').trim();
      if (!entry || word === '') continue;
      entry.words.push(word);
      if (Number.isFinite(conf) && conf! >= 0) entry.confs.push(conf!);
    }
  }
  const out: ReadLine[] = [];
  for (const { line, words, confs } of lines) {
    if (words.length === 0 || line.box.w <= 0 || line.box.h <= 0) continue;
    const mean = confs.length ? confs.reduce((a, b) => a + b, 0) / confs.length : 0;
    out.push({ box: line.box, text: words.join(' '), confidence: clamp01(mean / 100) });
  }
  return out;
}

/** The version in what `tesseract --version` prints. */
function versionIn(out: string): string | undefined {
  return /tesseract\s+(\S+)/.exec(out)?.[1];
}

/** The binary found before is no longer where it was; `failure` is what the call fails with. */
class ProgramGone extends Error {
  constructor(readonly failure: ProviderError) {
    super(failure.message);
  }
}

function findProgramSync(name: string, searchPath = DEFAULT_PROGRAM_PATH): string | undefined {
  const dirs = searchPath.split(path.delimiter).filter(Boolean);
  for (const dir of dirs) {
    const candidate = path.join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
}

export type TesseractEngineChoice = 'auto' | 'native' | 'js';

/**
 * The `tesseract` provider of a worker (P3): the native binary when it is installed (or when
 * asked for), tesseract.js otherwise; both with `threads` engines at once (P2).
 */
export function createTesseractEngine(options: {
  engine: TesseractEngineChoice;
  threads: number;
  tessdataDir?: string;
  searchPath?: string;
}): NativeTesseractProvider | TesseractProvider {
  const native =
    options.engine === 'native' ||
    (options.engine === 'auto' && nativeTesseractAvailable(options.searchPath));
  if (native) {
    return new NativeTesseractProvider({
      tessdataDir: options.tessdataDir,
      threads: options.threads,
      searchPath: options.searchPath,
    });
  }
  return new TesseractProvider({ tessdataDir: options.tessdataDir, threads: options.threads });
}
