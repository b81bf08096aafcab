import Link from 'next/link';
import type { ReactNode } from 'react';
import { pageImageSources, ZOOMS, type Zoom } from './pageImage';

/**
 * V7: the page as the Image API draws it, at the width shown (the browser picks from the
 * srcset by `sizes`), with its line boxes laid over it in the master's pixel coordinates (an
 * SVG viewBox, so no style attribute places them); zoomed by a class, never inline styles.
 */
export function PageImage({
  pageId,
  service,
  size,
  zoom,
  children,
}: {
  pageId: number;
  service: string;
  size: { width: number; height: number } | null;
  zoom: Zoom;
  children: ReactNode;
}) {
  const { src, srcSet } = pageImageSources(service, size);
  return (
    <>
      <div className={`canvas-scroll zoom-${zoom}`}>
        <figure className="canvas">
          {/* biome-ignore lint/performance/noImgElement: Image API widths in a srcset, already the size shown */}
          <img
            src={src}
            srcSet={srcSet}
            sizes={`(min-width: 60rem) ${55 * zoom}vw, ${100 * zoom}vw`}
            alt={`Scan of page ${pageId}`}
            width={size?.width}
            height={size?.height}
          />
          {children}
        </figure>
      </div>
      <nav className="zoom" aria-label="Zoom">
        <span className="muted small">Zoom</span>
        {ZOOMS.map((z) => (
          <Link
            key={z}
            href={z === 1 ? `/pages/${pageId}` : `/pages/${pageId}?zoom=${z}`}
            scroll={false}
            aria-current={z === zoom ? 'true' : undefined}
          >
            {z}×
          </Link>
        ))}
      </nav>
    </>
  );
}
