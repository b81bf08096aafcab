import 'server-only';
import { execFile } from 'node:child_process';
import { type AnnotationPage, segmentsOf } from '@quire/core/annotation';
import { clampBox } from '@quire/core/interchange/lines';
import {
  ImageNotEmbeddable,
  jpegImage,
  type PdfImage,
  pngImage,
  SearchablePdfWriter,
} from '@quire/core/interchange/searchablePdf';
import { blobStore } from './blobs';
import { ApiError } from './errors';
import { config } from './server';

/**
 * I7: the searchable PDF of an item or a page, streamed. Each page's image is read from the
 * blob store only when the reader asks for more (a pull stream), embedded as it is when it
 * is a PNG or JPEG a PDF can carry, else converted to PNG by ImageMagick first (TIFF, WebP,
 * transparent or interlaced PNG); its lines, from whichever revision the caller may see, are
 * laid over it as invisible text. One page is in memory at a time.
 */

export interface PdfPage {
  id: number;
  kind: 'image' | 'audio';
  blobKey: string | null;
  mediaType: string | null;
  width: number | null;
  height: number | null;
  /** The revision the caller may see (current, or the published snapshot). */
  annotationPage: AnnotationPage | null;
}

const CONVERT_TIMEOUT_MS = 120_000;
const CONVERTED_BYTES = 1024 * 1024 * 1024;

async function readBlob(key: string): Promise<Uint8Array> {
  const chunks: Buffer[] = [];
  for await (const chunk of blobStore().read(key)) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** The page's image as ImageMagick renders it to PNG: first frame, flattened on white. */
async function convertedToPng(key: string): Promise<Uint8Array> {
  const file = await blobStore().localPath(key);
  return new Promise((resolve, reject) => {
    execFile(
      'convert',
      [
        `${file}[0]`,
        '-background',
        'white',
        '-alpha',
        'remove',
        '-alpha',
        'off',
        '-interlace',
        'none',
        'png:-',
      ],
      { encoding: 'buffer', maxBuffer: CONVERTED_BYTES, timeout: CONVERT_TIMEOUT_MS },
      (error, stdout) => (error ? reject(error) : resolve(stdout)),
    );
  });
}

async function imageOf(page: PdfPage): Promise<PdfImage> {
  const key = page.blobKey!;
  if (page.mediaType === 'image/png' || page.mediaType === 'image/jpeg') {
    const bytes = await readBlob(key);
    try {
      return page.mediaType === 'image/png' ? pngImage(bytes) : jpegImage(bytes);
    } catch (error) {
      if (!(error instanceof ImageNotEmbeddable)) throw error;
    }
  }
  return pngImage(await convertedToPng(key));
}

function linesOf(page: PdfPage, image: PdfImage) {
  if (!page.annotationPage) return [];
  return segmentsOf(page.annotationPage)
    .sort((a, b) => a.index - b.index)
    .flatMap((s) => {
      if (s.target.kind !== 'xywh') return [];
      // Boxes are in the page's pixels; a converted image has the same size.
      const sx = page.width ? image.width / page.width : 1;
      const sy = page.height ? image.height / page.height : 1;
      const box = clampBox(
        {
          x: s.target.box.x * sx,
          y: s.target.box.y * sy,
          w: s.target.box.w * sx,
          h: s.target.box.h * sy,
        },
        image.width,
        image.height,
      );
      return [{ box, text: s.text }];
    });
}

/** A streamed PDF of the image pages given, in order; 422 when none of them is an image. */
export function searchablePdfResponse(
  pages: readonly PdfPage[],
  options: { filename: string; title?: string; cacheControl: string; headers?: HeadersInit },
): Response {
  const images = pages.filter((p) => p.kind === 'image' && p.blobKey);
  if (images.length === 0) {
    throw new ApiError('unsupported_format', 'a searchable PDF needs at least one image page');
  }
  const dpi = config().QUIRE_PDF_DPI;
  const writer = new SearchablePdfWriter({
    producer: 'Quire',
    ...(options.title ? { title: options.title } : {}),
  });
  let next = 0;
  let begun = false;
  const stream = new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        if (!begun) {
          begun = true;
          for (const chunk of writer.begin()) controller.enqueue(chunk);
          return;
        }
        const page = images[next++];
        if (!page) {
          for (const chunk of writer.end()) controller.enqueue(chunk);
          controller.close();
          return;
        }
        const image = await imageOf(page);
        for (const chunk of writer.page({ image, lines: linesOf(page, image), dpi })) {
          controller.enqueue(chunk);
        }
      } catch (error) {
        // Headers are sent already: the reader sees a truncated download, never a wrong one.
        controller.error(error);
      }
    },
  });
  return new Response(stream, {
    headers: {
      ...options.headers,
      'Content-Type': 'application/pdf',
      'Content-Disposition': `attachment; filename="${options.filename}.pdf"`,
      'Cache-Control': options.cacheControl,
    },
  });
}
