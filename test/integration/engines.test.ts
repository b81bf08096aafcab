/**
 * The real offline engines (Q2) on fixtures the tests make (rendered serif text, flite
 * speech) and on real material from test/fixtures/real. No fakes: tesseract.js and
 * pocketsphinx run for real.
 */
import { execFile } from 'node:child_process';
import { copyFile, mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Segment } from '../../core/annotation';
import { ProviderError } from '../../core/failures';
import type { AudioPoll, CallContext, LineBox } from '../../core/provider';
import { readingText } from '../../core/readingText';
import {
  characterErrors,
  corpusErrorRate,
  wordErrorRate,
  wordErrors,
} from '../../core/textMetrics';
import { PocketsphinxProvider } from '../../providers/pocketsphinx';
import { polishImageLines } from '../../providers/polish';
import { bundledLanguageDir, TesseractProvider } from '../../providers/tesseract';
import {
  frakturLines,
  imageDimensions,
  JFK_RECORDING,
  JFK_REFERENCE,
  MANIFESTO_PAGE,
  makeTempDir,
  PAGE_LINES,
  RENDERED_LINES,
  REPO_ROOT,
  removeDir,
  renderLine,
  renderPage,
  SPEECH_SENTENCES,
  synthesizeSpeech,
} from '../support/fixtures';

const run = promisify(execFile);

function ctx(language = 'en', signal = new AbortController().signal): CallContext {
  return { signal, language, options: {}, callKey: 'engines-test' };
}

async function expectProviderError(work: Promise<unknown>, category: string, message?: RegExp) {
  const error = await work.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ProviderError);
  expect((error as ProviderError).category).toBe(category);
  if (message) expect((error as ProviderError).message).toMatch(message);
  return error as ProviderError;
}

const wholeImage: LineBox = { box: { x: 0, y: 0, w: 100_000, h: 100_000 } };

let dir: string;
const tesseract = new TesseractProvider();

beforeAll(async () => {
  dir = await makeTempDir();
});

afterAll(async () => {
  await tesseract.close();
  await removeDir(dir);
});

describe('Q2 tesseract.js OCR engine', () => {
  it('Q2 tesseract reads rendered serif lines with CER <= 5%', async () => {
    const counts = [];
    for (const [i, text] of RENDERED_LINES.entries()) {
      const image = await renderLine(dir, `line-${i}.png`, text);
      const result = await tesseract.recognizeLine(
        { path: image, mediaType: 'image/png' },
        wholeImage,
        ctx('en'),
      );
      expect(result.cost).toEqual({ units: 1, unit: 'line' });
      expect(result.confidence).toBeGreaterThan(0.5);
      counts.push(characterErrors(text, result.text));
    }
    const cer = corpusErrorRate(counts);
    console.info(JSON.stringify({ test: 'rendered-lines', lines: counts.length, cer }));
    expect(cer).toBeLessThanOrEqual(0.05);
  });

  it('Q2 tesseract reads a Deflate-compressed TIFF line with CER <= 5%', async () => {
    const text = RENDERED_LINES[1]!;
    const image = await renderLine(dir, 'line.tif', text);
    const result = await tesseract.recognizeLine(
      { path: image, mediaType: 'image/tiff' },
      wholeImage,
      ctx('eng'),
    );
    expect(corpusErrorRate([characterErrors(text, result.text)])).toBeLessThanOrEqual(0.05);
  });

  it('Q2 tesseract finds the 10 line boxes of a rendered page in reading order and reads them', async () => {
    const image = await renderPage(dir, 'page.png', PAGE_LINES);
    const { width, height } = await imageDimensions(image);
    const media = { path: image, mediaType: 'image/png' };
    const { lines, cost } = await tesseract.segmentPage(media, ctx('en'));
    expect(cost).toEqual({ units: 1, unit: 'page' });
    expect(lines).toHaveLength(10);
    for (const [i, line] of lines.entries()) {
      expect(line.box.x).toBeGreaterThanOrEqual(0);
      expect(line.box.y + line.box.h).toBeLessThanOrEqual(height);
      expect(line.box.x + line.box.w).toBeLessThanOrEqual(width);
      expect(line.box.h).toBeGreaterThan(15);
      expect(line.confidence).toBeGreaterThan(0.5);
      if (i > 0) expect(line.box.y).toBeGreaterThan(lines[i - 1]!.box.y + lines[i - 1]!.box.h / 2);
    }
    // Each box holds its own line: recognising box i gives line i of the page.
    const counts = [];
    for (const [i, line] of lines.entries()) {
      const { text } = await tesseract.recognizeLine(media, line, ctx('en'));
      counts.push(characterErrors(PAGE_LINES[i]!, text));
    }
    expect(corpusErrorRate(counts)).toBeLessThanOrEqual(0.05);
  });

  it('Q2 V8 tesseract segments the real manifesto scan into many lines; polish keeps them, the reading text joins its hyphenated words', async () => {
    const media = { path: MANIFESTO_PAGE, mediaType: 'image/png' };
    const { lines } = await tesseract.segmentPage(media, ctx('en'));
    expect(lines.length).toBeGreaterThanOrEqual(25);
    for (let i = 1; i < lines.length; i++)
      expect(lines[i]!.box.y).toBeGreaterThan(lines[i - 1]!.box.y);
    const texts: string[] = [];
    for (const line of lines)
      texts.push((await tesseract.recognizeLine(media, line, ctx('en'))).text);
    const hyphenEnds = texts.filter((t) => /\p{L}-$/u.test(t)).length;
    expect(hyphenEnds).toBeGreaterThanOrEqual(4);
    // V8: polish changes no line's words, so every hyphen at a line end stays.
    const polished = polishImageLines(texts);
    expect(polished).toHaveLength(texts.length);
    expect(polished.filter((t) => /\p{L}-$/u.test(t)).length).toBe(hyphenEnds);
    expect(polished.every((t) => t.length > 0)).toBe(true);
    const joined = readingText(polished);
    for (const word of ['Communism', 'parties', 'adversaries', 'nationalities', 'English']) {
      expect(joined).toContain(word);
    }
    expect(joined).toContain('holy alliance');
  });

  it('Q2 tesseract with the English model is poor on real Fraktur lines (measured, bounded)', async () => {
    const counts = [];
    for (const line of await frakturLines()) {
      const { text } = await tesseract.recognizeLine(
        { path: line.image, mediaType: 'image/tiff' },
        wholeImage,
        ctx('en'),
      );
      counts.push(characterErrors(line.text, text));
    }
    const cer = corpusErrorRate(counts);
    console.info(JSON.stringify({ test: 'fraktur-eng', lines: counts.length, cer }));
    expect(counts).toHaveLength(20);
    // It reads the Latin letters Fraktur shares with Antiqua, not more.
    expect(cer).toBeGreaterThan(0.1);
    expect(cer).toBeLessThan(0.5);
  });

  it('Q2 tesseract loads extra traineddata from a configured directory (Fraktur model on Fraktur lines)', async () => {
    const tessdata = path.join(dir, 'tessdata');
    await mkdir(tessdata, { recursive: true });
    // Debian's tesseract-ocr-frk (apt-packages.txt) is the real Fraktur model.
    await copyFile(
      '/usr/share/tesseract-ocr/5/tessdata/frk.traineddata',
      path.join(tessdata, 'frk.traineddata'),
    );
    const withFraktur = new TesseractProvider({ tessdataDir: tessdata });
    try {
      const counts = [];
      for (const line of await frakturLines()) {
        const { text } = await withFraktur.recognizeLine(
          { path: line.image, mediaType: 'image/tiff' },
          wholeImage,
          ctx('frk'),
        );
        counts.push(characterErrors(line.text, text));
      }
      const cer = corpusErrorRate(counts);
      console.info(JSON.stringify({ test: 'fraktur-frk', lines: counts.length, cer }));
      expect(cer).toBeLessThan(0.12);
      // English still comes from the bundled package when the directory lacks it.
      const image = await renderLine(dir, 'line-eng.png', RENDERED_LINES[0]!);
      const { text } = await withFraktur.recognizeLine(
        { path: image, mediaType: 'image/png' },
        wholeImage,
        ctx('en'),
      );
      expect(corpusErrorRate([characterErrors(RENDERED_LINES[0]!, text)])).toBeLessThanOrEqual(
        0.05,
      );
      await expectProviderError(
        withFraktur.recognizeLine(
          { path: image, mediaType: 'image/png' },
          wholeImage,
          ctx('frk+eng'),
        ),
        'invalid',
        /two data directories/,
      );
    } finally {
      await withFraktur.close();
    }
  });

  it('Q3 tesseract classifies a missing language as invalid and an unreadable image as image', async () => {
    const image = await renderLine(dir, 'line-err.png', 'error cases');
    await expectProviderError(
      tesseract.recognizeLine({ path: image, mediaType: 'image/png' }, wholeImage, ctx('deu')),
      'invalid',
      /'deu' is not installed.*QUIRE_TESSDATA_DIR/,
    );
    await expectProviderError(
      tesseract.segmentPage({ path: image, mediaType: 'image/png' }, ctx('x!')),
      'invalid',
    );
    const garbage = path.join(dir, 'garbage.png');
    await writeFile(garbage, 'this is not an image at all');
    await expectProviderError(
      tesseract.segmentPage({ path: garbage, mediaType: 'image/png' }, ctx('en')),
      'image',
    );
    await expectProviderError(
      tesseract.recognizeLine({ path: garbage, mediaType: 'image/png' }, wholeImage, ctx('en')),
      'image',
    );
    await expectProviderError(
      tesseract.segmentPage(
        { path: path.join(dir, 'absent.png'), mediaType: 'image/png' },
        ctx('en'),
      ),
      'internal',
    );
    // The engine survives the failures.
    const { text } = await tesseract.recognizeLine(
      { path: image, mediaType: 'image/png' },
      wholeImage,
      ctx('en'),
    );
    expect(text).toBe('error cases');
  });

  it('Q2 tesseract keeps one engine worker across calls and starts a new one after close()', async () => {
    const provider = new TesseractProvider();
    const image = await renderLine(dir, 'line-reuse.png', 'one worker for many calls');
    const started = Date.now();
    await provider.recognizeLine({ path: image, mediaType: 'image/png' }, wholeImage, ctx('en'));
    const first = Date.now() - started;
    const again = Date.now();
    for (let i = 0; i < 3; i++) {
      await provider.recognizeLine({ path: image, mediaType: 'image/png' }, wholeImage, ctx('en'));
    }
    const later = (Date.now() - again) / 3;
    // A warm call skips loading the model; a worker per call could not be this much faster.
    expect(later).toBeLessThan(first);
    const engines = (provider as unknown as { engines: Map<string, unknown> }).engines;
    expect(engines.size).toBe(1);
    await provider.close();
    expect(engines.size).toBe(0);
    const { text } = await provider.recognizeLine(
      { path: image, mediaType: 'image/png' },
      wholeImage,
      ctx('en'),
    );
    expect(text).toBe('one worker for many calls');
    // A call in flight when the engine closes fails instead of hanging.
    const inFlight = provider.segmentPage(
      { path: MANIFESTO_PAGE, mediaType: 'image/png' },
      ctx('en'),
    );
    await new Promise((r) => setTimeout(r, 100));
    await provider.close();
    await expectProviderError(inFlight, 'internal', /closed/);
  });

  it('Q2 tesseract works without any network and writes nothing into the working directory', async () => {
    const work = path.join(dir, 'offline-cwd');
    await mkdir(work, { recursive: true });
    const image = await renderLine(dir, 'line-offline.png', RENDERED_LINES[2]!);
    const script = path.join(dir, 'offline-probe.mts');
    await writeFile(
      script,
      [
        `import { TesseractProvider } from ${JSON.stringify(path.join(REPO_ROOT, 'providers', 'tesseract.ts'))};`,
        'const provider = new TesseractProvider();',
        `const ctx = { signal: new AbortController().signal, language: 'en', options: {}, callKey: 'offline' };`,
        `const line = await provider.recognizeLine({ path: ${JSON.stringify(image)}, mediaType: 'image/png' }, { box: { x: 0, y: 0, w: 9999, h: 9999 } }, ctx);`,
        'await provider.close();',
        'process.stdout.write(JSON.stringify({ text: line.text }));',
      ].join('\n'),
    );
    const tsx = path.join(REPO_ROOT, 'node_modules', '.bin', 'tsx');
    // A fresh network namespace has no interface but a downed loopback: any fetch fails.
    const { stdout } = await run('unshare', ['--net', '--', tsx, script], {
      cwd: work,
      env: { ...process.env, QUIRE_TESSDATA_DIR: '' },
    });
    expect(JSON.parse(stdout.trim().split('\n').pop()!).text).toBe(RENDERED_LINES[2]);
    expect(await readdir(work)).toEqual([]);
    expect(bundledLanguageDir()).toContain(path.join('node_modules', '@tesseract.js-data', 'eng'));
  });

  it('Q1 tesseract call stops waiting when the call is aborted', async () => {
    const controller = new AbortController();
    controller.abort(new Error('cancelled by test'));
    await expect(
      tesseract.segmentPage(
        { path: MANIFESTO_PAGE, mediaType: 'image/png' },
        ctx('en', controller.signal),
      ),
    ).rejects.toThrow('cancelled by test');
    const late = new AbortController();
    const pending = tesseract.segmentPage(
      { path: MANIFESTO_PAGE, mediaType: 'image/png' },
      ctx('en', late.signal),
    );
    setTimeout(() => late.abort(new Error('cancelled mid-call')), 50);
    await expect(pending).rejects.toThrow('cancelled mid-call');
  });
});

async function pollUntilDone(
  provider: PocketsphinxProvider,
  engineJobId: string,
  timeoutMs = 90_000,
): Promise<Extract<AudioPoll, { state: 'done' }>> {
  const deadline = Date.now() + timeoutMs;
  let sawRunning = false;
  while (Date.now() < deadline) {
    const poll = await provider.pollAudio(engineJobId, ctx());
    if (poll.state === 'done') return poll;
    sawRunning = true;
    expect(poll.progress ?? 0).toBeLessThan(1);
    await new Promise((r) => setTimeout(r, 150));
  }
  throw new Error(`engine job not done in time (saw running: ${sawRunning})`);
}

function textOf(segments: readonly Segment[]): string {
  return segments.map((s) => s.text).join(' ');
}

describe('Q2 pocketsphinx speech engine', () => {
  let workDir: string;
  let speech: PocketsphinxProvider;

  beforeAll(async () => {
    workDir = path.join(dir, 'pocketsphinx-jobs');
    speech = new PocketsphinxProvider({ workDir });
  });

  it('Q2 pocketsphinx transcribes flite speech with WER <= 20%', async () => {
    const counts = [];
    for (const [i, sentence] of SPEECH_SENTENCES.entries()) {
      const wav = await synthesizeSpeech(dir, `speech-${i}.wav`, sentence);
      const { engineJobId } = await speech.submitAudio(
        { path: wav, mediaType: 'audio/wav' },
        ctx('en'),
      );
      const done = await pollUntilDone(speech, engineJobId);
      expect(done.segments.length).toBeGreaterThanOrEqual(1);
      expect(done.cost.unit).toBe('audio_second');
      expect(done.cost.units).toBeGreaterThan(1);
      for (const segment of done.segments) {
        expect(segment.target.kind).toBe('t');
        if (segment.target.kind === 't') {
          expect(segment.target.end).toBeGreaterThan(segment.target.start);
          expect(segment.target.end).toBeLessThanOrEqual(done.cost.units + 0.05);
        }
      }
      counts.push(wordErrors(sentence, textOf(done.segments)));
      await speech.deleteAudio(engineJobId, ctx());
    }
    const wer = corpusErrorRate(counts);
    console.info(JSON.stringify({ test: 'flite-speech', utterances: counts.length, wer }));
    expect(wer).toBeLessThanOrEqual(0.2);
  });

  it('Q2 pocketsphinx owns its copy: our blob may go after submit, and a restarted provider still polls the job', async () => {
    const wav = await synthesizeSpeech(dir, 'speech-own.wav', SPEECH_SENTENCES[1]!);
    const blob = path.join(dir, 'blob-copy.wav');
    await copyFile(wav, blob);
    const { engineJobId } = await speech.submitAudio(
      { path: blob, mediaType: 'audio/wav' },
      ctx('en-US'),
    );
    await rm(blob);
    // A new provider object on the same machine (the worker restarted) finds the job on disk.
    const afterRestart = new PocketsphinxProvider({ workDir });
    const done = await pollUntilDone(afterRestart, engineJobId);
    expect(wordErrorRate(SPEECH_SENTENCES[1]!, textOf(done.segments))).toBeLessThanOrEqual(0.2);
    expect(await readdir(workDir)).toContain(engineJobId);
    await afterRestart.deleteAudio(engineJobId, ctx());
    await afterRestart.deleteAudio(engineJobId, ctx());
    expect(await readdir(workDir)).not.toContain(engineJobId);
    await expectProviderError(
      afterRestart.pollAudio(engineJobId, ctx()),
      'invalid',
      /unknown pocketsphinx job/,
    );
  });

  it('Q2 pocketsphinx restarts a recogniser that died without a result, and delete kills a running one', async () => {
    const long = await synthesizeSpeech(
      dir,
      'speech-long.wav',
      [...SPEECH_SENTENCES, ...SPEECH_SENTENCES].join(' '),
    );
    const { engineJobId } = await speech.submitAudio(
      { path: long, mediaType: 'audio/wav' },
      ctx('en'),
    );
    const record = JSON.parse(
      await readFile(path.join(workDir, engineJobId, 'job.json'), 'utf8'),
    ) as { pid: number };
    // As if the machine had killed it: the whole process group goes.
    process.kill(-record.pid, 'SIGKILL');
    await new Promise((r) => setTimeout(r, 200));
    const done = await pollUntilDone(speech, engineJobId);
    const twice = [...SPEECH_SENTENCES, ...SPEECH_SENTENCES].join(' ');
    expect(wordErrorRate(twice, textOf(done.segments))).toBeLessThanOrEqual(0.2);
    const restarted = JSON.parse(
      await readFile(path.join(workDir, engineJobId, 'job.json'), 'utf8'),
    ) as {
      restarts: number;
    };
    expect(restarted.restarts).toBe(1);
    await speech.deleteAudio(engineJobId, ctx());

    const second = await speech.submitAudio({ path: long, mediaType: 'audio/wav' }, ctx('en'));
    const secondRecord = JSON.parse(
      await readFile(path.join(workDir, second.engineJobId, 'job.json'), 'utf8'),
    ) as { pid: number };
    await speech.deleteAudio(second.engineJobId, ctx());
    await new Promise((r) => setTimeout(r, 200));
    let alive = true;
    try {
      process.kill(secondRecord.pid, 0);
    } catch {
      alive = false;
    }
    expect(alive).toBe(false);
    expect(await readdir(workDir)).not.toContain(second.engineJobId);
  });

  it('Q3 pocketsphinx classifies bad ids, unreadable audio, other languages and a missing binary', async () => {
    await expectProviderError(speech.pollAudio('../../etc', ctx()), 'invalid', /malformed/);
    await expectProviderError(
      speech.pollAudio('01234567-89ab-4def-8123-456789abcdef', ctx()),
      'invalid',
      /unknown pocketsphinx job/,
    );
    await speech.deleteAudio('01234567-89ab-4def-8123-456789abcdef', ctx());
    const jobsBefore = (await speech.listEngineJobs()).length;
    const garbage = path.join(dir, 'garbage.wav');
    await writeFile(garbage, 'not audio');
    await expectProviderError(
      speech.submitAudio({ path: garbage, mediaType: 'audio/wav' }, ctx()),
      'image',
    );
    const wav = await synthesizeSpeech(dir, 'speech-lang.wav', 'hello');
    await expectProviderError(
      speech.submitAudio({ path: wav, mediaType: 'audio/wav' }, ctx('de')),
      'invalid',
      /no model for language 'de'/,
    );
    const missing = new PocketsphinxProvider({
      workDir,
      programs: { pocketsphinx: 'pocketsphinx_continuous_absent' },
    });
    await expectProviderError(
      missing.submitAudio({ path: wav, mediaType: 'audio/wav' }, ctx()),
      'outage',
      /Debian package pocketsphinx/,
    );
    const noModel = new PocketsphinxProvider({
      workDir,
      models: {
        en: {
          hmm: '/absent/hmm',
          lm: '/absent/lm',
          dict: '/absent/dict',
          debianPackage: 'pocketsphinx-en-us',
        },
      },
    });
    await expectProviderError(
      noModel.submitAudio({ path: wav, mediaType: 'audio/wav' }, ctx()),
      'outage',
      /pocketsphinx-en-us/,
    );
    // Failed submits leave no engine jobs behind.
    expect((await speech.listEngineJobs()).length).toBe(jobsBefore);
  });

  it('Q2 pocketsphinx transcribes the real JFK recording (poorly: WER recorded, not asserted good)', async () => {
    const started = Date.now();
    const { engineJobId } = await speech.submitAudio(
      { path: JFK_RECORDING, mediaType: 'audio/wav' },
      ctx('en'),
    );
    const done = await pollUntilDone(speech, engineJobId);
    const seconds = (Date.now() - started) / 1000;
    expect(done.segments.length).toBeGreaterThanOrEqual(1);
    expect(done.cost.units).toBeCloseTo(11, 0);
    for (const s of done.segments) {
      expect(s.target.kind === 't' && s.target.start >= 0 && s.target.end <= 11.1).toBe(true);
    }
    const wer = wordErrorRate(JFK_REFERENCE, textOf(done.segments));
    console.info(
      JSON.stringify({
        test: 'jfk',
        segments: done.segments.length,
        wer,
        rtf: seconds / done.cost.units,
      }),
    );
    expect(Number.isFinite(wer)).toBe(true);
    await speech.deleteAudio(engineJobId, ctx());
  });
});
