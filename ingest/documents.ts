import { execFile } from 'node:child_process';
import { createReadStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Readable } from 'node:stream';
import type { Segment } from '../core/annotation';
import {
  type PdfImage,
  parsePdfImages,
  parsePdfInfo,
  renderedSize,
  scannedImage,
  textLayerLines,
} from '../core/interchange/pdfText';
import { checkImageLimits, type MediaLimits, MediaRejection } from '../core/media';

/**
 * I5: a PDF or a multi-page TIFF is taken in as one page per PDF page or TIFF frame, in order.
 * The upload is already on disk (ingest/upload.ts); here it is opened with maintained tools,
 * one page at a time, so memory stays flat however many pages the file has:
 * - PDF: poppler's `pdfinfo` gives the page count and sizes and `pdfimages -list` the images
 *   each page draws. A page that is one scanned image (I9) is taken at that image's own pixels:
 *   `pdfimages` extracts it unchanged in its pixels (a JPEG keeps its bytes). Any other page is
 *   rendered by `pdftoppm` to a PNG at the configured resolution. Every page's pixel size is
 *   checked against the limits, after that choice, before any page is stored; each page is
 *   then streamed into the blob store, and `pdftotext -raw -bbox` reads its text
 *   layer, whose lines (boxes scaled to the rendered pixels) become the page's imported
 *   revision.
 * - TIFF: libtiff's `tiffcp` copies each frame, bytes unchanged, into a TIFF of its own (the
 *   frame sizes were read from the directory chain and checked already, core/media.ts).
 * A tool that fails on a file refuses it as `malformed_media`; the caller stores nothing then.
 */

export interface DocumentPage {
  /** Page number in the file, from 1. */
  page: number;
  /** A PDF page's text layer as line segments in the rendered page's pixels; none when empty. */
  textLayer?: Segment[];
}

/** Stores one page's image and answers its pixel size (read from the stored bytes). */
export type StorePage = (
  image: Readable,
  page: number,
) => Promise<{ width: number; height: number }>;

export interface PdfOptions {
  /** Rendering resolution (dots per inch). */
  dpi: number;
  /** Per tool call; a page that takes longer is refused. */
  toolTimeoutMs?: number;
}

/** What the PDF says made it (pdfinfo's Producer, else Creator); kept in the provenance. */
export interface PdfDocument {
  producer: string | null;
  pages: DocumentPage[];
}

const TOOL_OUTPUT_BYTES = 64 * 1024 * 1024;

function run(
  command: string,
  args: string[],
  timeoutMs: number,
): Promise<{ stdout: string; ok: boolean }> {
  return new Promise((resolve, reject) => {
    execFile(
      command,
      args,
      { timeout: timeoutMs, maxBuffer: TOOL_OUTPUT_BYTES, encoding: 'utf8' },
      (error, stdout) => {
        // An errno (ENOENT, EAGAIN) means the tool never ran: the server's failure, not the file's.
        const errno = (error as NodeJS.ErrnoException | null)?.code;
        if (typeof errno === 'string') {
          reject(
            new Error(
              errno === 'ENOENT'
                ? `${command} is not installed (poppler-utils, libtiff-tools)`
                : `${command} could not run: ${errno}`,
            ),
          );
          return;
        }
        resolve({ stdout, ok: !error });
      },
    );
  });
}

function malformed(what: string): MediaRejection {
  return new MediaRejection('malformed_media', `the ${what} could not be read`);
}

/**
 * Checks a PDF against the limits, then renders and stores its pages one after the other.
 * Every refusal comes before the first page is stored, except a page the renderer fails on.
 */
export async function ingestPdf(
  file: string,
  limits: MediaLimits,
  options: PdfOptions,
  storePage: StorePage,
): Promise<PdfDocument> {
  const timeout = options.toolTimeoutMs ?? 120_000;
  const summary = await run('pdfinfo', [file], timeout);
  const info = parsePdfInfo(summary.stdout);
  if (info.encrypted) {
    throw new MediaRejection('document_encrypted', 'the PDF is encrypted; upload it unlocked');
  }
  if (!summary.ok || info.pages < 1) throw malformed('PDF');
  if (info.pages > limits.maxPagesPerFile) {
    throw new MediaRejection(
      'too_many_pages',
      `the PDF has ${info.pages} pages; a file may have at most ${limits.maxPagesPerFile}`,
    );
  }
  const sized = await run('pdfinfo', ['-f', '1', '-l', String(info.pages), file], timeout);
  const sizes = parsePdfInfo(sized.stdout).sizes;
  const listed = await run('pdfimages', ['-list', file], timeout);
  const images = listed.ok ? parsePdfImages(listed.stdout) : [];
  const plans: PagePlan[] = [];
  for (let page = 1; page <= info.pages; page++) {
    const size = sizes.get(page);
    if (!size) throw malformed('PDF page size');
    const scan = scannedImage(
      images.filter((image) => image.page === page),
      size,
    );
    const pixels = scan
      ? { width: scan.width, height: scan.height }
      : renderedSize(size, options.dpi);
    checkImageLimits(pixels.width, pixels.height, limits);
    plans.push({ page, scan });
  }
  const producer =
    /^Producer:\s+(.+)$/m.exec(summary.stdout)?.[1]?.trim() ||
    /^Creator:\s+(.+)$/m.exec(summary.stdout)?.[1]?.trim() ||
    null;
  const pages: DocumentPage[] = [];
  for (const { page, scan } of plans) {
    const pixels = await (scan
      ? extractPage(file, page, scan, timeout, storePage)
      : renderPage(file, page, options.dpi, timeout, storePage));
    const layer = await run(
      'pdftotext',
      ['-raw', '-bbox', '-enc', 'UTF-8', '-f', String(page), '-l', String(page), file, '-'],
      timeout,
    );
    const lines = layer.ok ? textLayerLines(layer.stdout, pixels) : [];
    pages.push({ page, ...(lines.length > 0 ? { textLayer: lines } : {}) });
  }
  return { producer: producer ? producer.slice(0, 200) : null, pages };
}

/** A page's plan: its number and, when it is one scanned image, that image (I9). */
interface PagePlan {
  page: number;
  scan: PdfImage | null;
}

/**
 * One page written to a file by a poppler tool, then stored. Written first: the page's bytes
 * are complete (or the tool failed) before any of them is stored, and a slow store never
 * holds the tool's pipe.
 */
async function storeToolPage(
  command: string,
  args: (root: string) => string[],
  output: (root: string) => string,
  page: number,
  timeoutMs: number,
  storePage: StorePage,
): Promise<{ width: number; height: number }> {
  const dir = await mkdtemp(path.join(tmpdir(), 'quire-page-'));
  try {
    const root = path.join(dir, 'page');
    const written = await run(command, args(root), timeoutMs);
    if (!written.ok) throw malformed(`PDF's page ${page}`);
    return await storePage(createReadStream(output(root)), page);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

const pageRange = (page: number) => ['-f', String(page), '-l', String(page)];

/** I9: the page's one scanned image, extracted at its own pixels (a JPEG keeps its bytes). */
function extractPage(
  file: string,
  page: number,
  scan: PdfImage,
  timeoutMs: number,
  storePage: StorePage,
): Promise<{ width: number; height: number }> {
  const jpeg = scan.encoding === 'jpeg';
  return storeToolPage(
    'pdfimages',
    (root) => [jpeg ? '-j' : '-png', ...pageRange(page), file, root],
    (root) => `${root}-000.${jpeg ? 'jpg' : 'png'}`,
    page,
    timeoutMs,
    storePage,
  );
}

/** Any other page, drawn by the renderer at the configured resolution. */
function renderPage(
  file: string,
  page: number,
  dpi: number,
  timeoutMs: number,
  storePage: StorePage,
): Promise<{ width: number; height: number }> {
  return storeToolPage(
    'pdftoppm',
    (root) => [...pageRange(page), '-r', String(dpi), '-png', '-singlefile', file, root],
    (root) => `${root}.png`,
    page,
    timeoutMs,
    storePage,
  );
}

/** Copies each frame of a multi-page TIFF into a TIFF of its own and stores it, in order. */
export async function ingestTiffFrames(
  file: string,
  frames: number,
  storePage: StorePage,
  toolTimeoutMs = 120_000,
): Promise<DocumentPage[]> {
  const dir = await mkdtemp(path.join(tmpdir(), 'quire-frames-'));
  try {
    const pages: DocumentPage[] = [];
    for (let frame = 0; frame < frames; frame++) {
      const out = path.join(dir, `frame-${frame}.tif`);
      const copied = await run('tiffcp', [`${file},${frame}`, out], toolTimeoutMs);
      if (!copied.ok) throw malformed(`TIFF's frame ${frame + 1}`);
      await storePage(createReadStream(out), frame + 1);
      await rm(out, { force: true });
      pages.push({ page: frame + 1 });
    }
    return pages;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
