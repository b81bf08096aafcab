import { type ChildProcess, execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { statSync } from 'node:fs';
import { copyFile, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { ensureDatabase, migrate } from '../../db/migrate';
import { arg, databaseUrl } from '../lib/benchDatabase';
import { postFiles, serverStats, startIngestServer, stopIngestServer } from '../lib/uploadClient';

/**
 * I5 benchmark: ingest of one many-page PDF through the HTTP ingest (bench/ingest/server.ts,
 * the web's batch route behind a bare server so its memory is measured alone): pages per
 * second and the server's peak RSS while it renders and stores the pages one by one. The
 * PDF is the real manifesto scan with the text layer tesseract writes, repeated by poppler's
 * pdfunite, so every page has its text layer imported; since I9 each page, one scanned image,
 * is extracted at the scan's own pixels rather than rendered (run the same bench on the
 * previous code for the rendering figure: bench/iiif/pdf-last-run-i9-previous-code.json). The baseline, in the
 * same run, is the same number of pages uploaded as the PNGs the renderer makes, in one
 * request: what storing the pages costs without rendering them.
 *
 * Usage: npx tsx bench/iiif/pdfIngest.ts [--pages 200] [--dpi 300]
 * Prints one JSON object. Env: QUIRE_BENCH_ADMIN_URL (default local Postgres, trust).
 * pdftoppm and pdftotext run as child processes; their memory is not the web process's.
 */

const exec = promisify(execFile);
const MB = 1024 * 1024;
const SCAN = join(
  import.meta.dirname,
  '..',
  '..',
  'test',
  'fixtures',
  'real',
  'manifesto-page-0015.png',
);

async function main() {
  const pages = arg('pages', 200);
  const dpi = arg('dpi', 300);
  const work = await mkdtemp(join(tmpdir(), 'quire-pdf-bench-'));
  const name = `quire_bench_${randomBytes(4).toString('hex')}`;
  const url = databaseUrl(name);
  let server: ChildProcess | undefined;
  let port = 0;
  const client = new pg.Client({ connectionString: url });
  try {
    // The input: one page OCRed by tesseract (its text layer), repeated `pages` times.
    const scan = join(work, 'manifesto.png');
    await copyFile(SCAN, scan);
    await exec('tesseract', [scan, join(work, 'one'), '--dpi', '300', '-l', 'eng', 'pdf']);
    const pdf = join(work, 'book.pdf');
    await exec('pdfunite', [...Array.from({ length: pages }, () => join(work, 'one.pdf')), pdf]);
    // The baseline's pages: the renderer's own PNG of that page at the same resolution.
    await exec('pdftoppm', [
      '-r',
      `${dpi}`,
      '-png',
      '-singlefile',
      join(work, 'one.pdf'),
      join(work, 'rendered'),
    ]);
    const rendered = join(work, 'rendered.png');

    await ensureDatabase(url);
    await migrate(url);
    await client.connect();
    const ws = (await client.query(`INSERT INTO workspaces (name) VALUES ('bench') RETURNING id`))
      .rows[0].id;
    ({ server, port } = await startIngestServer({
      DATABASE_URL: url,
      QUIRE_BLOB_DIR: join(work, 'blobs'),
      QUIRE_PDF_DPI: String(dpi),
      NODE_OPTIONS: '--expose-gc',
    }));
    const path = `/ws/${ws}/batches`;
    const round = (n: number) => Math.round(n * 100) / 100;

    const measure = async (files: Array<{ name: string; path: string }>) => {
      const before = await serverStats(port, '/reset', 'POST');
      const start = performance.now();
      const res = await postFiles(port, path, files);
      const seconds = (performance.now() - start) / 1000;
      if (res.status !== 201) throw new Error(`ingest failed: ${res.body}`);
      const stored = JSON.parse(res.body).pages.length as number;
      if (stored !== pages) throw new Error(`expected ${pages} pages, got ${stored}`);
      const after = await serverStats(port);
      return {
        pages: stored,
        seconds: round(seconds),
        pagesPerSecond: round(stored / seconds),
        rssBeforeMb: round(before.rss / MB),
        peakRssMb: round(after.peakRss / MB),
        growthMb: round((after.peakRss - before.rss) / MB),
      };
    };

    const baseline = await measure(
      Array.from({ length: pages }, (_, i) => ({ name: `page-${i}.png`, path: rendered })),
    );
    const pdfRun = await measure([{ name: 'book.pdf', path: pdf }]);
    const { rows } = await client.query(
      "SELECT count(*)::int AS n FROM page_revisions WHERE source = 'import'",
    );
    console.log(
      JSON.stringify({
        benchmark: 'pdf-ingest',
        machine: 'shared (figures are noisy)',
        dpi,
        pdfBytes: statSync(pdf).size,
        renderedPageBytes: statSync(rendered).size,
        pdf: { ...pdfRun, textLayersImported: rows[0].n },
        baselinePngPages: baseline,
        pdfToPngTimeRatio: round(pdfRun.seconds / baseline.seconds),
      }),
    );
  } finally {
    stopIngestServer(server);
    await client.end().catch(() => {});
    await rm(work, { recursive: true, force: true });
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
