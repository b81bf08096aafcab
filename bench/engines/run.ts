/**
 * Engine benchmark (Q2): OCR lines per second and character error rate with tesseract.js,
 * speech real-time factor and word error rate with pocketsphinx, on fixtures made here
 * (rendered serif lines, flite speech) and on real material (test/fixtures/real). Medians of
 * several runs; prints one JSON document. Run: `npx tsx bench/engines/run.ts` (BENCH_RUNS=3).
 */
import { existsSync } from 'node:fs';
import { copyFile, mkdir } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { CallContext, LineBox } from '../../core/provider';
import {
  characterErrors,
  corpusErrorRate,
  type ErrorCount,
  wordErrors,
} from '../../core/textMetrics';
import { PocketsphinxProvider } from '../../providers/pocketsphinx';
import { TesseractProvider } from '../../providers/tesseract';
import {
  frakturLines,
  JFK_RECORDING,
  JFK_REFERENCE,
  MANIFESTO_PAGE,
  makeTempDir,
  RENDERED_LINES,
  removeDir,
  renderLine,
  SPEECH_SENTENCES,
  synthesizeSpeech,
} from '../../test/support/fixtures';

const RUNS = Math.max(1, Number(process.env.BENCH_RUNS ?? 3));
const FRAKTUR_MODEL = '/usr/share/tesseract-ocr/5/tessdata/frk.traineddata';
const wholeImage: LineBox = { box: { x: 0, y: 0, w: 1_000_000, h: 1_000_000 } };

function ctx(language: string): CallContext {
  return { signal: new AbortController().signal, language, options: {}, callKey: 'bench' };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

const round = (n: number, digits = 3) => Math.round(n * 10 ** digits) / 10 ** digits;

interface Sample {
  image: string;
  text: string;
  mediaType: string;
}

async function benchLines(provider: TesseractProvider, samples: Sample[], language: string) {
  const times: number[] = [];
  let counts: ErrorCount[] = [];
  for (let run = 0; run < RUNS; run++) {
    counts = [];
    const started = performance.now();
    for (const s of samples) {
      const { text } = await provider.recognizeLine(
        { path: s.image, mediaType: s.mediaType },
        wholeImage,
        ctx(language),
      );
      counts.push(characterErrors(s.text, text));
    }
    times.push((performance.now() - started) / 1000);
  }
  const seconds = median(times);
  return {
    lines: samples.length,
    runs: RUNS,
    medianSeconds: round(seconds),
    linesPerSecond: round(samples.length / seconds, 2),
    cer: round(corpusErrorRate(counts), 4),
  };
}

async function benchPage(provider: TesseractProvider) {
  const segmentTimes: number[] = [];
  const recognizeTimes: number[] = [];
  let lines = 0;
  const media = { path: MANIFESTO_PAGE, mediaType: 'image/png' };
  for (let run = 0; run < RUNS; run++) {
    let started = performance.now();
    const page = await provider.segmentPage(media, ctx('en'));
    segmentTimes.push((performance.now() - started) / 1000);
    lines = page.lines.length;
    started = performance.now();
    for (const line of page.lines) await provider.recognizeLine(media, line, ctx('en'));
    recognizeTimes.push((performance.now() - started) / 1000);
  }
  return {
    page: path.basename(MANIFESTO_PAGE),
    linesFound: lines,
    runs: RUNS,
    segmentMedianSeconds: round(median(segmentTimes)),
    recognizeMedianSeconds: round(median(recognizeTimes)),
    linesPerSecond: round(lines / median(recognizeTimes), 2),
  };
}

async function transcribe(provider: PocketsphinxProvider, file: string) {
  const started = performance.now();
  const { engineJobId } = await provider.submitAudio(
    { path: file, mediaType: 'audio/wav' },
    ctx('en'),
  );
  for (;;) {
    const poll = await provider.pollAudio(engineJobId, ctx('en'));
    if (poll.state === 'done') {
      const seconds = (performance.now() - started) / 1000;
      await provider.deleteAudio(engineJobId, ctx('en'));
      return {
        seconds,
        audioSeconds: poll.cost.units,
        text: poll.segments.map((s) => s.text).join(' '),
        segments: poll.segments.length,
      };
    }
    await new Promise((r) => setTimeout(r, 25));
  }
}

async function benchSpeech(
  provider: PocketsphinxProvider,
  items: { file: string; reference: string }[],
) {
  const rtfs: number[] = [];
  let counts: ErrorCount[] = [];
  let audioSeconds = 0;
  for (let run = 0; run < RUNS; run++) {
    counts = [];
    let seconds = 0;
    audioSeconds = 0;
    for (const item of items) {
      const result = await transcribe(provider, item.file);
      seconds += result.seconds;
      audioSeconds += result.audioSeconds;
      counts.push(wordErrors(item.reference, result.text));
    }
    rtfs.push(seconds / audioSeconds);
  }
  return {
    recordings: items.length,
    audioSeconds: round(audioSeconds, 2),
    runs: RUNS,
    realTimeFactor: round(median(rtfs)),
    wer: round(corpusErrorRate(counts), 4),
  };
}

async function main() {
  const dir = await makeTempDir('quire-bench-engines-');
  const tesseract = new TesseractProvider();
  try {
    const rendered: Sample[] = [];
    for (const [i, text] of RENDERED_LINES.entries()) {
      rendered.push({
        image: await renderLine(dir, `line-${i}.png`, text),
        text,
        mediaType: 'image/png',
      });
    }
    const fraktur = (await frakturLines()).map((l) => ({ ...l, mediaType: 'image/tiff' }));

    let started = performance.now();
    await tesseract.recognizeLine(
      { path: rendered[0]!.image, mediaType: 'image/png' },
      wholeImage,
      ctx('en'),
    );
    const engineStartSeconds = (performance.now() - started) / 1000;

    const ocr: Record<string, unknown> = {
      engine: tesseract.identity(),
      engineStartSeconds: round(engineStartSeconds),
      renderedLines: await benchLines(tesseract, rendered, 'en'),
      frakturLinesEnglishModel: await benchLines(tesseract, fraktur, 'en'),
      manifestoPage: await benchPage(tesseract),
    };
    if (existsSync(FRAKTUR_MODEL)) {
      const tessdata = path.join(dir, 'tessdata');
      await mkdir(tessdata);
      await copyFile(FRAKTUR_MODEL, path.join(tessdata, 'frk.traineddata'));
      const withFraktur = new TesseractProvider({ tessdataDir: tessdata });
      await withFraktur.recognizeLine(
        { path: fraktur[0]!.image, mediaType: 'image/tiff' },
        wholeImage,
        ctx('frk'),
      );
      ocr.frakturLinesFrakturModel = {
        model: 'Debian tesseract-ocr-frk',
        ...(await benchLines(withFraktur, fraktur, 'frk')),
      };
      await withFraktur.close();
    }

    const speech = new PocketsphinxProvider({ workDir: path.join(dir, 'pocketsphinx') });
    const flite = [];
    for (const [i, sentence] of SPEECH_SENTENCES.entries()) {
      flite.push({
        file: await synthesizeSpeech(dir, `speech-${i}.wav`, sentence),
        reference: sentence,
      });
    }
    started = performance.now();
    const speechResults = {
      engine: speech.identity(),
      fliteSpeech: await benchSpeech(speech, flite),
      jfkRecording: await benchSpeech(speech, [{ file: JFK_RECORDING, reference: JFK_REFERENCE }]),
    };

    const report = {
      benchmark: 'engines',
      machine: {
        cpus: os.cpus().length,
        cpuModel: os.cpus()[0]?.model ?? 'unknown',
        node: process.version,
      },
      runs: RUNS,
      ocr,
      speech: speechResults,
    };
    process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  } finally {
    await tesseract.close();
    await removeDir(dir);
  }
}

await main();
