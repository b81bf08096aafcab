import { execFile } from 'node:child_process';
import { mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import sharp from 'sharp';
import { writePyramid } from '../../blobs/derivatives';
import { TILE_SIZE } from '../../core/interchange/imageApi';
import { vectorPdf } from '../../test/support/vectorPdf';

/**
 * D13 benchmark: a page derivative's bytes against its master's, for the real masters the
 * requirement names (the manifesto scan, a bilevel PNG; the Kant colour scan, a TIFF; a PDF
 * page rendered at 300 dpi), the pyramid as Quire makes it now beside the previous encoding
 * (JPEG quality 90 tiles of every master, in colour) made in the same run, with the build
 * time as the median of the runs.
 *
 * Usage: npx tsx bench/iiif/derivativeSize.ts [--runs 3]
 * Prints one JSON object.
 */

const exec = promisify(execFile);
const root = join(import.meta.dirname, '..', '..', 'test', 'fixtures');
const runsFlag = process.argv.indexOf('--runs');
const runs = runsFlag > 0 ? Number(process.argv[runsFlag + 1]) : 3;

async function previousPyramid(master: string, out: string): Promise<void> {
  let image = sharp(master, { page: 0, limitInputPixels: false });
  if ((await image.metadata()).hasAlpha) image = image.flatten({ background: '#ffffff' });
  await image
    .tiff({
      tile: true,
      pyramid: true,
      tileWidth: TILE_SIZE,
      tileHeight: TILE_SIZE,
      compression: 'jpeg',
      quality: 90,
    })
    .toFile(out);
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

async function main() {
  const dir = await mkdtemp(join(tmpdir(), 'quire-bench-derivatives-'));
  try {
    const pdf = join(dir, 'born-digital.pdf');
    const lines = Array.from({ length: 30 }, (_, i) => `Line ${i + 1} of a born-digital page.`);
    await writeFile(pdf, vectorPdf([lines]));
    await exec('pdftoppm', ['-r', '300', '-png', '-singlefile', pdf, join(dir, 'pdf-page')]);
    const masters = {
      manifestoPng: join(root, 'real', 'manifesto-page-0015.png'),
      kantTiff: join(root, 'interchange', 'kant_aufklaerung_1784_0017.tif'),
      pdfPage300dpi: join(dir, 'pdf-page.png'),
    };
    const results: Record<string, unknown> = {};
    for (const [name, master] of Object.entries(masters)) {
      const meta = await sharp(master).metadata();
      const masterBytes = (await stat(master)).size;
      const now: number[] = [];
      const before: number[] = [];
      let pyramid: Awaited<ReturnType<typeof writePyramid>> | undefined;
      let previousBytes = 0;
      for (let run = 0; run < runs; run++) {
        let started = performance.now();
        pyramid = await writePyramid(master, join(dir, `${name}.tif`));
        now.push(performance.now() - started);
        started = performance.now();
        await previousPyramid(master, join(dir, `${name}-previous.tif`));
        before.push(performance.now() - started);
        previousBytes = (await stat(join(dir, `${name}-previous.tif`))).size;
      }
      results[name] = {
        pixels: `${meta.width}x${meta.height}`,
        bitsPerSample: meta.bitsPerSample,
        channels: meta.channels,
        masterBytes,
        encoding: pyramid!.encoding,
        derivativeChannels: pyramid!.channels,
        derivativeBytes: pyramid!.sizeBytes,
        ratio: Number((pyramid!.sizeBytes / masterBytes).toFixed(2)),
        ofRaw1BitPixels:
          meta.bitsPerSample === 1
            ? Number((pyramid!.sizeBytes / ((meta.width! * meta.height!) / 8)).toFixed(2))
            : undefined,
        buildMsMedian: Math.round(median(now)),
        previous: {
          derivativeBytes: previousBytes,
          ratio: Number((previousBytes / masterBytes).toFixed(2)),
          buildMsMedian: Math.round(median(before)),
        },
      };
    }
    console.log(JSON.stringify({ bench: 'derivative-size', runs, results }, null, 2));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
