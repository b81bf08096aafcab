/**
 * Fixtures the engine tests and benchmarks make for themselves: text lines and pages
 * rendered with ImageMagick in a serif font, speech synthesized with flite's `rms` voice,
 * and the real-world material kept in test/fixtures/real (its sources and licences in
 * SOURCES.md there).
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

/** Inside the repository, so a clone with nothing beside it runs its own tests. */
export const REAL_FIXTURES = path.join(REPO_ROOT, 'test', 'fixtures', 'real');

/** The real ImageMagick: `/usr/local/bin/convert` may be a stand-in on this machine. */
export const CONVERT = '/usr/bin/convert';
export const FLITE = '/usr/bin/flite';

export const SERIF_FONTS = [
  '/usr/share/fonts/truetype/liberation/LiberationSerif-Regular.ttf',
  '/usr/share/fonts/truetype/dejavu/DejaVuSerif.ttf',
];

function requireFile(file: string, debianPackage: string): string {
  if (!existsSync(file))
    throw new Error(`${file} is missing: install the Debian package ${debianPackage}`);
  return file;
}

export function serifFont(): string {
  const font = SERIF_FONTS.find((f) => existsSync(f));
  if (!font)
    throw new Error(
      'no serif font: install the Debian package fonts-liberation or fonts-dejavu-core',
    );
  return font;
}

export async function makeTempDir(prefix = 'quire-engines-'): Promise<string> {
  return mkdtemp(path.join(os.tmpdir(), prefix));
}

export async function removeDir(dir: string): Promise<void> {
  await rm(dir, { recursive: true, force: true });
}

/** Clean printed English lines: letters, digits and punctuation, the kind of text OCR must get right. */
export const RENDERED_LINES = [
  'The quick brown fox jumps over the lazy dog.',
  'In 1848 the letters were bound into a single volume.',
  'Please return the register to the archive by Friday.',
  'A careful reader will notice the second signature.',
  'The parish recorded 214 baptisms and 96 burials.',
  'Every page was numbered, dated and signed by the clerk.',
  'She wrote to her brother from Lisbon on 3 May.',
  'The ledger lists wages, rents, and the price of bread.',
];

/** A ten-line page: varied lengths so reading order is checked by text as well as position. */
export const PAGE_LINES = [
  'Minutes of the meeting held on the first of March',
  'Present were the chairman, the secretary and five members.',
  'The minutes of the previous meeting were read and approved.',
  'A letter from the county surveyor was laid on the table.',
  'It was resolved that the bridge be repaired before winter.',
  'The treasurer reported a balance of forty two pounds.',
  'Two new members were proposed and duly elected.',
  'The question of the school roof was deferred.',
  'There being no further business the meeting closed.',
  'Signed as a true record by the chairman.',
];

/** Short sentences that flite's rms voice says clearly and pocketsphinx's en-us model knows. */
export const SPEECH_SENTENCES = [
  'The quick brown fox jumps over the lazy dog.',
  'Please call me tomorrow at the office.',
  'We will meet in the library after lunch.',
  'The weather was cold and the roads were closed.',
];

/** Renders one line of text as a PNG (or TIFF with Deflate, when the name ends in .tif). */
export async function renderLine(
  dir: string,
  name: string,
  text: string,
  pointsize = 36,
): Promise<string> {
  const out = path.join(dir, name);
  const args = [
    '-background',
    'white',
    '-fill',
    'black',
    '-font',
    serifFont(),
    '-pointsize',
    String(pointsize),
    `label:${text}`,
    '-bordercolor',
    'white',
    '-border',
    '24',
    '-colorspace',
    'Gray',
    // 8-bit grey without alpha, as scanners write it.
    '-alpha',
    'remove',
    '-alpha',
    'off',
    '-depth',
    '8',
  ];
  if (out.endsWith('.tif')) args.push('-compress', 'Zip');
  await run(requireFile(CONVERT, 'imagemagick'), [...args, out]);
  return out;
}

/**
 * Renders lines one under another with wide margins, as a scanned page would hold them:
 * each line drawn at a known position (top to bottom), so reading order is known.
 */
export async function renderPage(
  dir: string,
  name: string,
  lines: readonly string[],
  pointsize = 32,
): Promise<string> {
  const out = path.join(dir, name);
  const margin = 120;
  const lineHeight = Math.round(pointsize * 1.9);
  const width = 1600;
  const height = 2 * margin + lineHeight * lines.length;
  const draw = lines.flatMap((line, i) => [
    '-annotate',
    `+${margin}+${margin + pointsize + i * lineHeight}`,
    line,
  ]);
  await run(requireFile(CONVERT, 'imagemagick'), [
    '-size',
    `${width}x${height}`,
    'xc:white',
    '-font',
    serifFont(),
    '-pointsize',
    String(pointsize),
    '-fill',
    'black',
    ...draw,
    '-colorspace',
    'Gray',
    '-depth',
    '8',
    out,
  ]);
  return out;
}

/** Pixel size of an image, read by ImageMagick. */
export async function imageDimensions(file: string): Promise<{ width: number; height: number }> {
  const identify = path.join(path.dirname(CONVERT), 'identify');
  const { stdout } = await run(requireFile(identify, 'imagemagick'), ['-format', '%w %h', file]);
  const [width, height] = stdout.trim().split(/\s+/).map(Number) as [number, number];
  return { width, height };
}

/** Synthesizes speech with flite's rms voice (16 kHz mono WAV). */
export async function synthesizeSpeech(dir: string, name: string, text: string): Promise<string> {
  const out = path.join(dir, name);
  await run(requireFile(FLITE, 'flite'), ['-voice', 'rms', '-t', text, '-o', out]);
  return out;
}

export interface GroundTruthLine {
  image: string;
  text: string;
}

/** The 20 real Fraktur line images of test/fixtures/real with their ground truth. */
export async function frakturLines(): Promise<GroundTruthLine[]> {
  const dir = path.join(REAL_FIXTURES, 'fraktur-lines');
  const names = (await readdir(dir)).filter((n) => n.endsWith('.tif')).sort();
  return Promise.all(
    names.map(async (n) => ({
      image: path.join(dir, n),
      text: (await readFile(path.join(dir, n.replace(/\.tif$/, '.gt.txt')), 'utf8')).trim(),
    })),
  );
}

export const MANIFESTO_PAGE = path.join(REAL_FIXTURES, 'manifesto-page-0015.png');
export const JFK_RECORDING = path.join(REAL_FIXTURES, 'jfk-inaugural-11s.wav');
/** What the JFK excerpt says (the well-known line of the 1961 inaugural address). */
export const JFK_REFERENCE =
  'And so, my fellow Americans: ask not what your country can do for you, ask what you can do for your country.';
