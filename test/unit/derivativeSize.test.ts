import { execFile } from 'node:child_process';
import { stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DERIVATIVE_BUDGET, writePyramid } from '../../blobs/derivatives';
import { MANIFESTO_PAGE, makeTempDir, removeDir } from '../support/fixtures';
import { KANT } from '../support/interchange';
import { manifestoTiff } from '../support/tiffMasters';
import { vectorPdf } from '../support/vectorPdf';

/**
 * D13 on real material: each derivative is a compressed pyramid of at most 1.5x its
 * master's bytes (a bilevel master: a stated fraction of its raw 1-bit pixels, and its
 * pixels kept exactly), and the Image API's levels are all there.
 */
const exec = promisify(execFile);
let dir: string;

beforeAll(async () => {
  dir = await makeTempDir('quire-derivative-size-');
});

afterAll(async () => {
  await removeDir(dir);
});

async function pyramidOf(master: string) {
  const out = path.join(dir, `${path.basename(master)}.pyramid.tif`);
  const pyramid = await writePyramid(master, out);
  const { size } = await stat(master);
  return { out, pyramid, ratio: pyramid.sizeBytes / size };
}

describe('D13 compressed derivatives', () => {
  it('D13 the bilevel manifesto scan: deflate, every pixel kept, under a third of its raw 1-bit pixels', async () => {
    const { out, pyramid } = await pyramidOf(MANIFESTO_PAGE);
    expect(pyramid).toMatchObject({ encoding: 'deflate', channels: 1, width: 2745, height: 4445 });
    const rawBits = (2745 * 4445) / 8;
    expect(pyramid.sizeBytes / rawBits).toBeLessThan(1 / 3);
    const level0 = await sharp(out, { page: 0 }).extractChannel(0).raw().toBuffer();
    const master = await sharp(MANIFESTO_PAGE).extractChannel(0).raw().toBuffer();
    expect(level0.equals(master)).toBe(true);
    expect((await sharp(out).metadata()).pages).toBe(6);
  }, 60_000);

  it('D13 the Kant colour scan (TIFF master): JPEG tiles, at most 1.5x the master', async () => {
    const { pyramid, ratio } = await pyramidOf(KANT.image);
    expect(pyramid).toMatchObject({ encoding: 'jpeg', channels: 3 });
    expect(ratio).toBeLessThanOrEqual(DERIVATIVE_BUDGET);
  }, 60_000);

  it('D13 a born-digital PDF page rendered at 300 dpi: grey, at most 1.5x the rendered master', async () => {
    const pdf = path.join(dir, 'born-digital.pdf');
    const lines = Array.from({ length: 30 }, (_, i) => `Line ${i + 1} of a born-digital page.`);
    await writeFile(pdf, vectorPdf([lines]));
    await exec('pdftoppm', ['-r', '300', '-png', '-singlefile', pdf, path.join(dir, 'page')]);
    const { pyramid, ratio } = await pyramidOf(path.join(dir, 'page.png'));
    expect(pyramid.channels).toBe(1);
    expect(ratio).toBeLessThanOrEqual(DERIVATIVE_BUDGET);
  }, 60_000);

  it('D13 a colour master that JPEG would swell (LZW text with colour patches): deflate, colour kept', async () => {
    // 138 KB of LZW for 3 MP: JPEG tiles would be 6x that; deflate is the smaller (about 3x,
    // the floor of 256-pixel tiles and the levels for so compressible a master).
    const master = path.join(dir, 'manifesto-colour.tif');
    await writeFile(master, await manifestoTiff(0.5));
    const { out, pyramid, ratio } = await pyramidOf(master);
    expect(pyramid).toMatchObject({ encoding: 'deflate', channels: 3 });
    expect(ratio).toBeLessThan(4);
    // The red patch (100,200 300x300 at scale 1) is still red in the pyramid.
    const { data } = await sharp(out, { page: 0 })
      .extract({ left: 100, top: 150, width: 10, height: 10 })
      .raw()
      .toBuffer({ resolveWithObject: true });
    expect(data[0]).toBeGreaterThan(180);
    expect(data[1]).toBeLessThan(80);
  }, 60_000);
});
