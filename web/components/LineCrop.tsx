import { lineCropSources, type PixelBox, type PixelSize } from './pageImage';

/**
 * V7: a line's image: its box of the page from the Image API, sized by attributes and
 * classes only (the Content-Security-Policy refuses style attributes).
 */
export function LineCrop({
  service,
  box,
  page,
  alt,
}: {
  service: string;
  box: PixelBox;
  page: PixelSize | null;
  alt: string;
}) {
  const crop = lineCropSources(service, box, page);
  if (!crop) return null;
  return (
    <div className="line-crop-frame">
      {/* biome-ignore lint/performance/noImgElement: an Image API region, already the size shown */}
      <img
        className="line-crop"
        src={crop.src}
        srcSet={crop.srcSet}
        width={crop.width}
        height={crop.height}
        alt={alt}
        data-testid="line-crop"
      />
    </div>
  );
}
