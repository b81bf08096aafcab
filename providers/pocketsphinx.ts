/**
 * The offline speech engine (Q2): Debian's `pocketsphinx_continuous -time yes` with the
 * `pocketsphinx-en-us` model, after `sox` turns the input into 16 kHz mono 16-bit WAV.
 *
 * It fits the asynchronous audio calls: `submitAudio` copies and converts the recording into
 * the engine job's own directory (so our blob may be deleted as soon as the id is saved) and
 * starts the recogniser as a detached process; `pollAudio` reads its result files;
 * `deleteAudio` kills it and removes the directory. Engine jobs live on disk, under
 * os.tmpdir()/quire-pocketsphinx/<id>, so a poll after a worker restart on the same
 * machine still finds them (and restarts a recogniser that died with the machine).
 *
 * Good on clean, synthesized speech; weak on real recordings (word error rate near 0.8 on
 * the JFK fixture): a Whisper-compatible server is the engine to recommend for real audio.
 */

import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import {
  copyFile,
  mkdir,
  readFile,
  readlink,
  rename,
  rm,
  stat,
  unlink,
  writeFile,
} from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Segment } from '../core/annotation';
import { ProviderError } from '../core/failures';
import type { MediaKind } from '../core/media';
import type {
  AudioEngine,
  AudioPoll,
  CallContext,
  CallCost,
  EngineIdentity,
  MediaInput,
} from '../core/provider';
import {
  ENGINE_JOB_ID,
  listOnDiskEngineJobs,
  requirePrograms,
  runProgram,
  throwIfAborted,
} from './engineSupport';
import { offlinePolish } from './polish';

export interface SpeechModel {
  /** Acoustic model directory (`-hmm`). */
  hmm: string;
  /** Language model (`-lm`). */
  lm: string;
  /** Pronunciation dictionary (`-dict`). */
  dict: string;
  /** Debian package that ships it, named in the error when it is missing. */
  debianPackage?: string;
}

const DEBIAN_MODEL_DIR = '/usr/share/pocketsphinx/model/en-us';

export const DEFAULT_MODELS: Readonly<Record<string, SpeechModel>> = {
  en: {
    hmm: path.join(DEBIAN_MODEL_DIR, 'en-us'),
    lm: path.join(DEBIAN_MODEL_DIR, 'en-us.lm.bin'),
    dict: path.join(DEBIAN_MODEL_DIR, 'cmudict-en-us.dict'),
    debianPackage: 'pocketsphinx-en-us',
  },
};

export interface PocketsphinxProviderOptions {
  /** Where engine jobs live (config `QUIRE_POCKETSPHINX_DIR`); default os.tmpdir()/quire-pocketsphinx. */
  workDir?: string;
  /** Program names or paths; defaults `sox` and `pocketsphinx_continuous` from the search path. */
  programs?: { sox?: string; pocketsphinx?: string };
  /** Where program names are looked for (config `PATH`); default /usr/local/bin:/usr/bin:/bin. */
  searchPath?: string;
  /** Models by primary language subtag; default English from `pocketsphinx-en-us`. */
  models?: Record<string, SpeechModel>;
  /** How often a recogniser that died without a result (machine restart) is started again; default 2. */
  maxRestarts?: number;
}

/** What is kept in `<job dir>/job.json`. */
interface JobRecord {
  id: string;
  createdAt: string;
  language: string;
  durationSeconds: number;
  pid?: number;
  startedAt?: string;
  restarts: number;
}

const JOB_ID = ENGINE_JOB_ID;

/** Media types sox knows by another name than their subtype; the rest go by file extension. */
const SOX_TYPES: Record<string, string> = {
  'audio/wav': 'wav',
  'audio/wave': 'wav',
  'audio/x-wav': 'wav',
  'audio/vnd.wave': 'wav',
  'audio/flac': 'flac',
  'audio/x-flac': 'flac',
  'audio/ogg': 'ogg',
  'audio/vorbis': 'ogg',
  'audio/mpeg': 'mp3',
  'audio/mp3': 'mp3',
  'audio/aiff': 'aiff',
  'audio/x-aiff': 'aiff',
  'audio/basic': 'au',
};

/** Words the recogniser emits that are not speech. */
function isFiller(word: string): boolean {
  return (
    word === '<s>' ||
    word === '</s>' ||
    word === '<sil>' ||
    /^\[.*\]$/.test(word) ||
    /^\+\+.*\+\+$/.test(word)
  );
}

export interface TimedWord {
  word: string;
  start: number;
  end: number;
  confidence: number;
}

export interface Utterance {
  start: number;
  end: number;
  words: TimedWord[];
}

/**
 * Parses `pocketsphinx_continuous -time yes` output: per utterance a hypothesis line, then
 * one `word start end posterior` line per word between `<s>` and `</s>`. Alternate
 * pronunciations (`the(2)`) are folded; fillers and silences dropped.
 */
export function parsePocketsphinxOutput(output: string): Utterance[] {
  const utterances: Utterance[] = [];
  let current: TimedWord[] | undefined;
  const flush = () => {
    if (current && current.length > 0) {
      utterances.push({
        start: current[0]!.start,
        end: current[current.length - 1]!.end,
        words: current,
      });
    }
    current = undefined;
  };
  for (const raw of output.split('\n')) {
    const fields = raw.trim().split(/\s+/);
    if (fields.length !== 4) continue;
    const [token, start, end, confidence] = fields as [string, string, string, string];
    if (![start, end, confidence].every((f) => /^-?\d+(?:\.\d+)?(?:e-?\d+)?$/i.test(f))) continue;
    if (token === '<s>') {
      flush();
      current = [];
      continue;
    }
    if (token === '</s>') {
      flush();
      continue;
    }
    current ??= [];
    const word = token.replace(/\(\d+\)$/, '');
    if (isFiller(word)) continue;
    current.push({ word, start: Number(start), end: Number(end), confidence: Number(confidence) });
  }
  flush();
  return utterances;
}

export function utterancesToSegments(utterances: readonly Utterance[]): Segment[] {
  return utterances.map((u, index) => ({
    index,
    target: { kind: 't', start: u.start, end: u.end },
    text: u.words.map((w) => w.word).join(' '),
    confidence: u.words.reduce((sum, w) => sum + w.confidence, 0) / u.words.length,
  }));
}

/** Seconds of audio in a 16-bit mono 16 kHz WAV, from its `data` chunk. */
export function wavDurationSeconds(wav: Buffer, sampleRate = 16_000, bytesPerSample = 2): number {
  let offset = 12;
  while (offset + 8 <= wav.length) {
    const id = wav.toString('ascii', offset, offset + 4);
    const size = wav.readUInt32LE(offset + 4);
    if (id === 'data') {
      const available = Math.min(size, wav.length - offset - 8);
      return available / (sampleRate * bytesPerSample);
    }
    offset += 8 + size + (size % 2);
  }
  return 0;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The job's recogniser is alive: the pid exists and (where /proc tells) runs in the job's directory, not a reused pid. */
async function isJobProcess(pid: number | undefined, dir: string): Promise<boolean> {
  if (pid === undefined || !isAlive(pid)) return false;
  try {
    return (await readlink(`/proc/${pid}/cwd`)) === dir;
  } catch {
    return process.platform !== 'linux';
  }
}

async function exists(file: string): Promise<boolean> {
  try {
    await stat(file);
    return true;
  } catch {
    return false;
  }
}

/** Runs the recogniser, then renames its output and writes its exit code, so a result is only ever seen whole. */
const RUNNER = [
  '"$1" -infile audio.wav -time yes -logfn /dev/null -hmm "$2" -lm "$3" -dict "$4" >out.partial 2>/dev/null',
  'code=$?',
  'mv out.partial out.txt',
  'echo "$code" >exit.partial && mv exit.partial exit',
].join('\n');

export class PocketsphinxProvider implements AudioEngine {
  readonly name = 'pocketsphinx';
  readonly workDir: string;
  private readonly soxProgram: string;
  private readonly recogniserProgram: string;
  private readonly models: Record<string, SpeechModel>;
  private readonly maxRestarts: number;
  private readonly searchPath: string | undefined;

  constructor(options: PocketsphinxProviderOptions = {}) {
    this.workDir = path.resolve(options.workDir ?? path.join(os.tmpdir(), 'quire-pocketsphinx'));
    this.searchPath = options.searchPath;
    this.soxProgram = options.programs?.sox ?? 'sox';
    this.recogniserProgram = options.programs?.pocketsphinx ?? 'pocketsphinx_continuous';
    this.models = options.models ?? { ...DEFAULT_MODELS };
    this.maxRestarts = options.maxRestarts ?? 2;
  }

  identity(model?: string): EngineIdentity {
    return {
      engine: 'pocketsphinx',
      model: model ?? 'cmusphinx-en-us-5.2',
      version: '5prealpha (Debian 0.8+5prealpha)',
    };
  }

  async submitAudio(
    audio: MediaInput,
    ctx: CallContext,
  ): Promise<{ engineJobId: string; cost: CallCost }> {
    throwIfAborted(ctx.signal);
    const language = this.languageOf(ctx.language);
    const model = this.models[language]!;
    const programs = await this.programs(model);
    const id = randomUUID();
    const dir = this.jobDir(id);
    await mkdir(dir, { recursive: true });
    try {
      // The engine owns a converted copy from here on: our blob may be deleted once the id is saved.
      const soxType = SOX_TYPES[audio.mediaType.split(';')[0]!.trim().toLowerCase()];
      const extension = soxType ?? (path.extname(audio.path).slice(1).toLowerCase() || 'wav');
      const input = path.join(dir, `input.${extension}`);
      try {
        await copyFile(audio.path, input);
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code ?? 'EIO';
        throw new ProviderError('internal', `audio file could not be read (${code})`);
      }
      const converted = await runProgram(
        programs.sox!,
        [
          '-V1',
          input,
          '-r',
          '16000',
          '-c',
          '1',
          '-b',
          '16',
          '-e',
          'signed-integer',
          path.join(dir, 'audio.wav'),
        ],
        { signal: ctx.signal, cwd: dir },
      );
      await unlink(input).catch(() => {});
      if (converted.code !== 0) {
        throw new ProviderError(
          'image',
          `unreadable or unsupported audio (${audio.mediaType || 'unknown type'})`,
        );
      }
      const durationSeconds = wavDurationSeconds(await readFile(path.join(dir, 'audio.wav')));
      const record: JobRecord = {
        id,
        createdAt: new Date().toISOString(),
        language,
        durationSeconds,
        restarts: 0,
      };
      await this.start(record, programs, model);
      return { engineJobId: id, cost: { units: 0, unit: 'audio_second' } };
    } catch (error) {
      await rm(dir, { recursive: true, force: true });
      if (ctx.signal.aborted) throw ctx.signal.reason ?? error;
      throw error;
    }
  }

  async pollAudio(engineJobId: string, ctx: CallContext): Promise<AudioPoll> {
    throwIfAborted(ctx.signal);
    const dir = this.existingJobDir(engineJobId);
    const record = await this.readRecord(engineJobId, dir);
    const exitFile = path.join(dir, 'exit');
    if (await exists(exitFile)) {
      const code = Number((await readFile(exitFile, 'utf8')).trim());
      if (code !== 0) throw new ProviderError('internal', `pocketsphinx exited with code ${code}`);
      const output = await readFile(path.join(dir, 'out.txt'), 'utf8');
      const segments = utterancesToSegments(parsePocketsphinxOutput(output));
      return {
        state: 'done',
        segments,
        cost: { units: record.durationSeconds, unit: 'audio_second' },
      };
    }
    if (await isJobProcess(record.pid, dir)) {
      const elapsed = (Date.now() - Date.parse(record.startedAt ?? record.createdAt)) / 1000;
      // pocketsphinx runs at about 0.4x real time here; a rough, capped estimate.
      const progress = Math.min(0.95, elapsed / Math.max(1, record.durationSeconds * 0.5));
      return { state: 'running', progress };
    }
    // It may have finished between the two checks above.
    if (await exists(exitFile)) return this.pollAudio(engineJobId, ctx);
    // The recogniser died without a result (killed with its machine, or by an operator).
    if (record.restarts >= this.maxRestarts) {
      throw new ProviderError('internal', 'pocketsphinx stopped without a result');
    }
    const model = this.models[record.language];
    if (!model)
      throw new ProviderError('invalid', `no pocketsphinx model for language '${record.language}'`);
    await this.start(
      { ...record, restarts: record.restarts + 1 },
      await this.programs(model),
      model,
    );
    return { state: 'running', progress: 0 };
  }

  async deleteAudio(engineJobId: string, ctx: CallContext): Promise<void> {
    throwIfAborted(ctx.signal);
    const dir = this.existingJobDir(engineJobId);
    let record: JobRecord | undefined;
    try {
      record = JSON.parse(await readFile(path.join(dir, 'job.json'), 'utf8')) as JobRecord;
    } catch {
      record = undefined;
    }
    if (record?.pid !== undefined && (await isJobProcess(record.pid, dir))) {
      try {
        // Detached: the runner leads its own process group, so this ends the recogniser too.
        process.kill(-record.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    await rm(dir, { recursive: true, force: true });
  }

  polish(
    text: string,
    kind: MediaKind,
    ctx: CallContext,
  ): Promise<{ text: string; cost: CallCost }> {
    return offlinePolish(text, kind, ctx.signal);
  }

  /** Engine jobs on this machine with their age, for the stranded-job sweep (O3). */
  listEngineJobs(): Promise<{ engineJobId: string; createdAt: Date }[]> {
    return listOnDiskEngineJobs(this.workDir);
  }

  private languageOf(language: string): string {
    const primary = (language || 'en').trim().split(/[-_]/)[0]!.toLowerCase();
    const key = primary === 'eng' ? 'en' : primary;
    if (!this.models[key]) {
      const have = Object.keys(this.models).join(', ');
      throw new ProviderError(
        'invalid',
        `pocketsphinx has no model for language '${primary}' (available: ${have})`,
      );
    }
    return key;
  }

  private async programs(model: SpeechModel): Promise<Record<string, string>> {
    const found = await requirePrograms(
      [
        { program: this.soxProgram, debianPackage: 'sox' },
        { program: this.recogniserProgram, debianPackage: 'pocketsphinx' },
      ],
      this.searchPath,
    );
    for (const file of [model.hmm, model.lm, model.dict]) {
      if (!(await exists(file))) {
        const pkg = model.debianPackage
          ? `: install the Debian package ${model.debianPackage}`
          : '';
        throw new ProviderError('outage', `pocketsphinx model file missing (${file})${pkg}`);
      }
    }
    return { sox: found[this.soxProgram]!, pocketsphinx: found[this.recogniserProgram]! };
  }

  private async start(
    record: JobRecord,
    programs: Record<string, string>,
    model: SpeechModel,
  ): Promise<void> {
    const dir = this.jobDir(record.id);
    await rm(path.join(dir, 'out.partial'), { force: true });
    const child = spawn(
      '/bin/sh',
      ['-c', RUNNER, 'quire-pocketsphinx', programs.pocketsphinx!, model.hmm, model.lm, model.dict],
      {
        cwd: dir,
        // Detached and unreferenced: the recogniser outlives a worker restart, and poll finds its result.
        detached: true,
        stdio: 'ignore',
      },
    );
    const started = await new Promise<number>((resolve, reject) => {
      child.once('spawn', () => resolve(child.pid!));
      child.once('error', reject);
    }).catch(() => {
      throw new ProviderError('internal', 'pocketsphinx could not be started');
    });
    child.unref();
    await this.writeRecord(dir, { ...record, pid: started, startedAt: new Date().toISOString() });
  }

  private jobDir(id: string): string {
    return path.join(this.workDir, id);
  }

  private existingJobDir(engineJobId: string): string {
    if (!JOB_ID.test(engineJobId))
      throw new ProviderError('invalid', 'malformed pocketsphinx job id');
    return this.jobDir(engineJobId);
  }

  private async readRecord(engineJobId: string, dir: string): Promise<JobRecord> {
    try {
      return JSON.parse(await readFile(path.join(dir, 'job.json'), 'utf8')) as JobRecord;
    } catch {
      throw new ProviderError('invalid', `unknown pocketsphinx job ${engineJobId}`);
    }
  }

  private async writeRecord(dir: string, record: JobRecord): Promise<void> {
    const temporary = path.join(dir, `job.json.${process.pid}.tmp`);
    await writeFile(temporary, JSON.stringify(record));
    await rename(temporary, path.join(dir, 'job.json'));
  }
}
