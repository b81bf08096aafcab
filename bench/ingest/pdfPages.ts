import { type ChildProcess, execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { statSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { ensureDatabase, migrate } from '../../db/migrate';
import { vectorPdf } from '../../test/support/vectorPdf';
import { arg, databaseUrl } from '../lib/benchDatabase';
import { postFiles, startIngestServer, stopIngestServer } from '../lib/uploadClient';

/**
 * I5 I9 ingest of PDFs as people bring them, through the HTTP ingest (bench/ingest/server.ts):
 * a 36-page born-digital PDF (text, no image: each page rendered at QUIRE_PDF_DPI, its text
 * layer imported) and a 20-page scanned PDF (the real manifesto scan at 96 ppi with the text
 * layer tesseract wrote, test/fixtures/real, repeated by poppler's pdfunite: each page's one
 * image is taken at its own pixels), in pages per second, median of 3 runs each, and the
 * bytes stored per page (every blob the pages hold: masters and derivatives) for the scan.
 *
 * Usage: npx tsx bench/ingest/pdfPages.ts [--runs 3]
 * Prints one JSON object and writes it to bench/ingest/last-run-pdf.json.
 * Env: QUIRE_BENCH_ADMIN_URL (default local Postgres, trust).
 */

const exec = promisify(execFile);
const ROOT = join(import.meta.dirname, '..', '..');
const SCAN_PDF = join(ROOT, 'test', 'fixtures', 'real', 'manifesto-page-0015-ocr-96ppi.pdf');
const BORN_DIGITAL_PAGES = 36;
const SCANNED_PAGES = 20;
/** The ingest's default resolution (QUIRE_PDF_DPI) for a page that is not one scanned image. */
const DPI = 300;

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
};
const round = (n: number) => Math.round(n * 100) / 100;

/** Text lines of a born-digital page, enough to fill it as a pamphlet's page would be. */
function pamphletPage(n: number): string[] {
  return Array.from(
    { length: 30 },
    (_, i) => `Page ${n + 1}, line ${i + 1}: the history of all hitherto existing society`,
  );
}

async function main() {
  const runs = arg('runs', 3);
  const work = await mkdtemp(join(tmpdir(), 'quire-pdf-pages-bench-'));
  const name = `quire_bench_${randomBytes(4).toString('hex')}`;
  const url = databaseUrl(name);
  let server: ChildProcess | undefined;
  const client = new pg.Client({ connectionString: url });
  try {
    const bornDigital = join(work, 'pamphlet.pdf');
    await writeFile(
      bornDigital,
      vectorPdf(Array.from({ length: BORN_DIGITAL_PAGES }, (_, i) => pamphletPage(i))),
    );
    const scanned = join(work, 'scans.pdf');
    await exec('pdfunite', [...Array.from({ length: SCANNED_PAGES }, () => SCAN_PDF), scanned]);

    await ensureDatabase(url);
    await migrate(url);
    await client.connect();
    let port: number;
    ({ server, port } = await startIngestServer({
      DATABASE_URL: url,
      QUIRE_BLOB_DIR: join(work, 'blobs'),
      QUIRE_PDF_DPI: String(DPI),
    }));

    /** One upload into a workspace of its own: seconds, pages, and what its pages store. */
    const once = async (file: { name: string; path: string }, pages: number) => {
      const ws = (await client.query(`INSERT INTO workspaces (name) VALUES ('bench') RETURNING id`))
        .rows[0].id as number;
      const start = performance.now();
      const res = await postFiles(port, `/ws/${ws}/batches`, [file]);
      const seconds = (performance.now() - start) / 1000;
      if (res.status !== 201) throw new Error(`ingest failed: ${res.body}`);
      const stored = JSON.parse(res.body).pages.length as number;
      if (stored !== pages) throw new Error(`expected ${pages} pages, got ${stored}`);
      const { rows } = await client.query(
        `SELECT coalesce(sum(size_bytes), 0)::bigint AS bytes, count(*)::int AS blobs,
                (SELECT count(*)::int FROM page_revisions r JOIN pages p ON p.id = r.page_id
                  WHERE p.workspace_id = $1 AND r.source = 'import') AS imported,
                (SELECT min(width) || 'x' || min(height) FROM pages WHERE workspace_id = $1) AS size
           FROM blobs WHERE workspace_id = $1 AND deleted_at IS NULL`,
        [ws],
      );
      return {
        seconds,
        bytes: Number(rows[0].bytes),
        blobs: rows[0].blobs as number,
        imported: rows[0].imported as number,
        size: rows[0].size as string,
      };
    };

    const measure = async (file: { name: string; path: string }, pages: number) => {
      const results = [];
      for (let i = 0; i < runs; i++) results.push(await once(file, pages));
      const seconds = results.map((r) => r.seconds);
      const last = results[results.length - 1]!;
      return {
        pages,
        fileBytes: statSync(file.path).size,
        runs: seconds.map(round),
        medianSeconds: round(median(seconds)),
        pagesPerSecond: round(pages / median(seconds)),
        textLayersImported: last.imported,
        pagePixels: last.size,
        storedBytesPerPage: Math.round(last.bytes / pages),
        blobsPerPage: round(last.blobs / pages),
      };
    };

    const digital = await measure({ name: 'pamphlet.pdf', path: bornDigital }, BORN_DIGITAL_PAGES);
    const scan = await measure({ name: 'scans.pdf', path: scanned }, SCANNED_PAGES);
    const result = {
      benchmark: 'pdf-pages-ingest',
      machine: 'shared, 2 cores (figures are noisy)',
      at: new Date().toISOString(),
      runsEach: runs,
      renderDpi: DPI,
      bornDigital: digital,
      scanned96ppi: scan,
    };
    const json = JSON.stringify(result);
    console.log(json);
    await writeFile(join(ROOT, 'bench', 'ingest', 'last-run-pdf.json'), `${json}\n`);
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
