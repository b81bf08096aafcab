/**
 * U4 media validation, pure: the type of a file is decided by its magic bytes, never by its
 * name or the client's Content-Type; image dimensions and audio durations come from headers
 * only. No pixel is ever decoded here, so a decompression bomb (a tiny file claiming a huge
 * canvas) is rejected by its declared size before any engine decodes it.
 *
 * Reading is through `ByteSource` (size + ranged reads) so the caller decides where the
 * bytes live (a buffer, a temporary file, an S3 range); this module does no I/O itself.
 */
import { DomainError, type ErrorCode } from './errors';

export const MEDIA_KINDS = ['image', 'audio'] as const;
export type MediaKind = (typeof MEDIA_KINDS)[number];

export type MediaType =
  | 'image/png'
  | 'image/jpeg'
  | 'image/tiff'
  | 'image/webp'
  | 'audio/wav'
  | 'audio/flac'
  | 'audio/mpeg'
  | 'audio/ogg'
  | 'audio/mp4';

export const MEDIA_TYPES: readonly MediaType[] = [
  'image/png',
  'image/jpeg',
  'image/tiff',
  'image/webp',
  'audio/wav',
  'audio/flac',
  'audio/mpeg',
  'audio/ogg',
  'audio/mp4',
];

export function kindOf(mediaType: MediaType): MediaKind {
  return mediaType.startsWith('image/') ? 'image' : 'audio';
}

/**
 * The codes a file is refused with (kinds in core/errorCodes.ts). Only the file's own bytes
 * count as too large; a canvas or a recording beyond the limits is a refused value, whatever
 * its byte size. I5: `too_many_pages` is a PDF or multi-page TIFF over `maxPagesPerFile`,
 * `document_encrypted` a PDF that needs a password to open.
 */
export const MEDIA_REJECTIONS = [
  'empty_file',
  'unsupported_media_type',
  'file_too_large',
  'image_too_large',
  'audio_too_long',
  'malformed_media',
  'too_many_pages',
  'document_encrypted',
] as const satisfies readonly ErrorCode[];

export type MediaRejectionCode = (typeof MEDIA_REJECTIONS)[number];

export class MediaRejection extends DomainError {
  override name = 'MediaRejection';
  constructor(
    override readonly code: MediaRejectionCode,
    message: string,
  ) {
    super(code, message);
  }
}

export interface MediaLimits {
  /** Bytes per file. */
  maxFileBytes: number;
  /** Declared width x height. */
  maxPixels: number;
  /** Longest declared side, whatever the pixel count. */
  maxImageSide: number;
  /** Longest recording. */
  maxAudioDurationMs: number;
  /** I5: pages of one PDF, frames of one TIFF. */
  maxPagesPerFile: number;
}

export const DEFAULT_MEDIA_LIMITS: MediaLimits = {
  maxFileBytes: 1024 * 1024 * 1024,
  maxPixels: 200_000_000,
  maxImageSide: 65_535,
  maxAudioDurationMs: 6 * 60 * 60 * 1000,
  maxPagesPerFile: 2000,
};

export interface MediaInfo {
  mediaType: MediaType;
  kind: MediaKind;
  width?: number;
  height?: number;
  /** Known for WAV, FLAC, OGG, M4A and most MP3; absent when the header does not tell. */
  durationMs?: number;
  /**
   * I5: a TIFF holding more than one image: every frame's size, in file order (the first is
   * `width` x `height`). Absent for a single image.
   */
  frames?: Array<{ width: number; height: number }>;
}

/** Random access to a file's bytes; `read` may return fewer bytes at the end of the file. */
export interface ByteSource {
  size: number;
  read(offset: number, length: number): Promise<Uint8Array>;
}

export function bufferSource(bytes: Uint8Array): ByteSource {
  return {
    size: bytes.length,
    read: async (offset, length) => bytes.subarray(offset, Math.min(bytes.length, offset + length)),
  };
}

/** How many leading bytes `sniffMediaType` needs to decide. */
export const SNIFF_BYTES = 16;

const ascii = (b: Uint8Array, at: number, text: string) => {
  if (b.length < at + text.length) return false;
  for (let i = 0; i < text.length; i++) if (b[at + i] !== text.charCodeAt(i)) return false;
  return true;
};

/** The media type by magic bytes, or undefined for anything Quire does not accept. */
export function sniffMediaType(head: Uint8Array): MediaType | undefined {
  const b = head;
  if (b.length >= 8 && b[0] === 0x89 && ascii(b, 1, 'PNG\r\n\x1a\n')) return 'image/png';
  if (b.length >= 3 && b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff) return 'image/jpeg';
  if (ascii(b, 0, 'II') && b[2] === 42 && b[3] === 0) return 'image/tiff';
  if (ascii(b, 0, 'MM') && b[2] === 0 && b[3] === 42) return 'image/tiff';
  if (ascii(b, 0, 'RIFF') && ascii(b, 8, 'WEBP')) return 'image/webp';
  if (ascii(b, 0, 'RIFF') && ascii(b, 8, 'WAVE')) return 'audio/wav';
  if (ascii(b, 0, 'RF64') && ascii(b, 8, 'WAVE')) return 'audio/wav';
  if (ascii(b, 0, 'fLaC')) return 'audio/flac';
  if (ascii(b, 0, 'OggS')) return 'audio/ogg';
  if (ascii(b, 4, 'ftyp')) {
    const brand = String.fromCharCode(...b.subarray(8, 12));
    if (['M4A ', 'M4B ', 'mp41', 'mp42', 'isom', 'dash', 'iso2', 'iso5', 'iso6'].includes(brand)) {
      return 'audio/mp4';
    }
    return undefined;
  }
  if (ascii(b, 0, 'ID3')) return 'audio/mpeg';
  if (b.length >= 2 && b[0] === 0xff && ((b[1] ?? 0) & 0xe0) === 0xe0 && mp3FrameHeader(b, 0)) {
    return 'audio/mpeg';
  }
  return undefined;
}

/**
 * Inspects a whole file: type, dimensions or duration, and the limits. Throws a
 * `MediaRejection` with a stable code for each reason a file is refused.
 */
export async function inspectMedia(
  source: ByteSource,
  limits: MediaLimits = DEFAULT_MEDIA_LIMITS,
): Promise<MediaInfo> {
  if (source.size === 0) throw new MediaRejection('empty_file', 'the file is empty');
  if (source.size > limits.maxFileBytes) {
    throw new MediaRejection(
      'file_too_large',
      `the file is larger than ${limits.maxFileBytes} bytes`,
    );
  }
  const head = await source.read(0, 64);
  const mediaType = sniffMediaType(head);
  if (!mediaType) {
    throw new MediaRejection(
      'unsupported_media_type',
      'the file is not a PNG, JPEG, TIFF, WebP, WAV, FLAC, MP3, OGG or M4A file',
    );
  }
  const info: MediaInfo = { mediaType, kind: kindOf(mediaType) };
  if (info.kind === 'image') {
    const dims = await imageDimensions(mediaType, source);
    if (!dims) throw new MediaRejection('malformed_media', 'the image header gives no dimensions');
    checkImageLimits(dims.width, dims.height, limits);
    info.width = dims.width;
    info.height = dims.height;
    if (mediaType === 'image/tiff') {
      const frames = await tiffFrames(source, limits.maxPagesPerFile);
      for (const frame of frames) checkImageLimits(frame.width, frame.height, limits);
      if (frames.length > 1) info.frames = frames;
    }
  } else {
    const durationMs = await audioDurationMs(mediaType, source);
    if (durationMs !== undefined) {
      if (durationMs > limits.maxAudioDurationMs) {
        throw new MediaRejection(
          'audio_too_long',
          `the recording is longer than ${Math.round(limits.maxAudioDurationMs / 1000)} s`,
        );
      }
      info.durationMs = durationMs;
    }
  }
  return info;
}

export function checkImageLimits(width: number, height: number, limits: MediaLimits): void {
  if (width <= 0 || height <= 0) {
    throw new MediaRejection('malformed_media', 'the image header declares a zero dimension');
  }
  if (
    width > limits.maxImageSide ||
    height > limits.maxImageSide ||
    width * height > limits.maxPixels
  ) {
    throw new MediaRejection(
      'image_too_large',
      `the image declares ${width}x${height} pixels, above the limit of ${limits.maxPixels} pixels or ${limits.maxImageSide} per side`,
    );
  }
}

// ---------------------------------------------------------------- images

type Dims = { width: number; height: number };

async function imageDimensions(type: MediaType, src: ByteSource): Promise<Dims | undefined> {
  switch (type) {
    case 'image/png':
      return pngDimensions(await src.read(0, 32));
    case 'image/jpeg':
      return jpegDimensions(src);
    case 'image/tiff':
      return tiffDimensions(src);
    case 'image/webp':
      return webpDimensions(await src.read(0, 64));
    default:
      return undefined;
  }
}

function view(b: Uint8Array): DataView {
  return new DataView(b.buffer, b.byteOffset, b.byteLength);
}

function pngDimensions(b: Uint8Array): Dims | undefined {
  // Signature (8), IHDR length (4), "IHDR" (4), width (4), height (4).
  if (b.length < 24 || !ascii(b, 12, 'IHDR')) return undefined;
  const v = view(b);
  return { width: v.getUint32(16), height: v.getUint32(20) };
}

const JPEG_SOF = new Set([
  0xc0, 0xc1, 0xc2, 0xc3, 0xc5, 0xc6, 0xc7, 0xc9, 0xca, 0xcb, 0xcd, 0xce, 0xcf,
]);

async function jpegDimensions(src: ByteSource): Promise<Dims | undefined> {
  let offset = 2;
  // Markers are walked by their lengths; entropy-coded data only follows SOS, after SOF.
  for (let guard = 0; guard < 10_000 && offset + 4 <= src.size; guard++) {
    const marker = await src.read(offset, 4);
    if (marker.length < 4 || marker[0] !== 0xff) return undefined;
    const code = marker[1] ?? 0;
    if (code === 0xff) {
      offset += 1; // fill byte
      continue;
    }
    if (code === 0xd8 || (code >= 0xd0 && code <= 0xd7) || code === 0x01) {
      offset += 2;
      continue;
    }
    if (code === 0xd9 || code === 0xda) return undefined;
    const length = view(marker).getUint16(2);
    if (length < 2) return undefined;
    if (JPEG_SOF.has(code)) {
      const sof = await src.read(offset + 4, 5);
      if (sof.length < 5) return undefined;
      const v = view(sof);
      return { height: v.getUint16(1), width: v.getUint16(3) };
    }
    offset += 2 + length;
  }
  return undefined;
}

async function tiffDimensions(src: ByteSource): Promise<Dims | undefined> {
  const header = await src.read(0, 8);
  if (header.length < 8) return undefined;
  const little = header[0] === 0x49;
  return (await tiffDirectory(src, view(header).getUint32(4, little), little))?.dims;
}

/** One image file directory: the image's size and the offset of the next directory (0: none). */
async function tiffDirectory(
  src: ByteSource,
  ifd: number,
  little: boolean,
): Promise<{ dims: Dims; next: number } | undefined> {
  if (ifd < 8 || ifd + 2 > src.size) return undefined;
  const countBytes = await src.read(ifd, 2);
  if (countBytes.length < 2) return undefined;
  const count = view(countBytes).getUint16(0, little);
  const entries = await src.read(ifd + 2, Math.min(count, 4096) * 12 + 4);
  const v = view(entries);
  let width: number | undefined;
  let height: number | undefined;
  const end = Math.min(count, 4096) * 12;
  for (let i = 0; i + 12 <= Math.min(entries.length, end); i += 12) {
    const tag = v.getUint16(i, little);
    if (tag !== 256 && tag !== 257) continue;
    const type = v.getUint16(i + 2, little);
    const value = type === 3 ? v.getUint16(i + 8, little) : v.getUint32(i + 8, little);
    if (tag === 256) width = value;
    else height = value;
  }
  const next = entries.length >= end + 4 ? v.getUint32(end, little) : 0;
  return width !== undefined && height !== undefined
    ? { dims: { width, height }, next }
    : undefined;
}

/**
 * I5: the size of every image of a TIFF, following the directory chain from the header. A
 * chain longer than `maxFrames` is refused as soon as it passes the limit, a chain that loops
 * or points outside the file as malformed; nothing is decoded.
 */
export async function tiffFrames(src: ByteSource, maxFrames: number): Promise<Dims[]> {
  const header = await src.read(0, 8);
  if (header.length < 8) throw new MediaRejection('malformed_media', 'the TIFF has no header');
  const little = header[0] === 0x49;
  const frames: Dims[] = [];
  const seen = new Set<number>();
  let offset = view(header).getUint32(4, little);
  while (offset !== 0) {
    if (seen.has(offset)) {
      throw new MediaRejection('malformed_media', 'the TIFF directory chain loops');
    }
    seen.add(offset);
    const directory = await tiffDirectory(src, offset, little);
    if (!directory) {
      throw new MediaRejection('malformed_media', 'a TIFF directory gives no dimensions');
    }
    frames.push(directory.dims);
    if (frames.length > maxFrames) {
      throw new MediaRejection('too_many_pages', `the file holds more than ${maxFrames} pages`);
    }
    offset = directory.next;
  }
  return frames;
}

/** I5: a PDF, by the `%PDF-` its header starts with. */
export function isPdfHeader(head: Uint8Array): boolean {
  return ascii(head, 0, '%PDF-');
}

function webpDimensions(b: Uint8Array): Dims | undefined {
  if (b.length < 30) return undefined;
  const v = view(b);
  if (ascii(b, 12, 'VP8 ')) {
    // Key frame start code 9d 01 2a, then 14-bit width and height.
    if (b[23] !== 0x9d || b[24] !== 0x01 || b[25] !== 0x2a) return undefined;
    return { width: v.getUint16(26, true) & 0x3fff, height: v.getUint16(28, true) & 0x3fff };
  }
  if (ascii(b, 12, 'VP8L')) {
    if (b[20] !== 0x2f) return undefined;
    const bits = v.getUint32(21, true);
    return { width: (bits & 0x3fff) + 1, height: ((bits >>> 14) & 0x3fff) + 1 };
  }
  if (ascii(b, 12, 'VP8X')) {
    const w = (b[24] ?? 0) | ((b[25] ?? 0) << 8) | ((b[26] ?? 0) << 16);
    const h = (b[27] ?? 0) | ((b[28] ?? 0) << 8) | ((b[29] ?? 0) << 16);
    return { width: w + 1, height: h + 1 };
  }
  return undefined;
}

// ---------------------------------------------------------------- audio

async function audioDurationMs(type: MediaType, src: ByteSource): Promise<number | undefined> {
  switch (type) {
    case 'audio/wav':
      return wavDuration(src);
    case 'audio/flac':
      return flacDuration(await src.read(0, 42));
    case 'audio/ogg':
      return oggDuration(src);
    case 'audio/mp4':
      return mp4Duration(src);
    case 'audio/mpeg':
      return mp3Duration(src);
    default:
      return undefined;
  }
}

async function wavDuration(src: ByteSource): Promise<number | undefined> {
  let offset = 12;
  let byteRate: number | undefined;
  for (let guard = 0; guard < 1000 && offset + 8 <= src.size; guard++) {
    const chunk = await src.read(offset, 16);
    if (chunk.length < 8) return undefined;
    const v = view(chunk);
    const size = v.getUint32(4, true);
    if (ascii(chunk, 0, 'fmt ')) {
      // fmt body: format (2), channels (2), sample rate (4), byte rate (4), ...
      if (size < 12) return undefined;
      const fmt = await src.read(offset + 8, 12);
      if (fmt.length >= 12) byteRate = view(fmt).getUint32(8, true);
    } else if (ascii(chunk, 0, 'data')) {
      if (!byteRate) return undefined;
      // A streamed WAV may declare 0 or 0xffffffff; the bytes actually present decide then.
      const present = src.size - (offset + 8);
      const bytes = size === 0 || size === 0xffffffff ? present : Math.min(size, present);
      return Math.round((bytes / byteRate) * 1000);
    }
    offset += 8 + size + (size % 2);
  }
  return undefined;
}

function flacDuration(b: Uint8Array): number | undefined {
  // "fLaC", then the STREAMINFO block header (4) and body (34).
  if (b.length < 42 || ((b[4] ?? 0) & 0x7f) !== 0) return undefined;
  const s = 8; // STREAMINFO body
  const sampleRate = ((b[s + 10] ?? 0) << 12) | ((b[s + 11] ?? 0) << 4) | ((b[s + 12] ?? 0) >> 4);
  const high = (b[s + 13] ?? 0) & 0x0f;
  const low = view(b).getUint32(s + 14);
  const totalSamples = high * 2 ** 32 + low;
  if (!sampleRate || !totalSamples) return undefined;
  return Math.round((totalSamples / sampleRate) * 1000);
}

async function oggDuration(src: ByteSource): Promise<number | undefined> {
  const first = await src.read(0, 128);
  // First page: 27-byte header, segment table, then the codec's identification packet.
  const segments = first[26] ?? 0;
  const packet = 27 + segments;
  let rate: number | undefined;
  let preSkip = 0;
  if (ascii(first, packet, '\x01vorbis')) rate = view(first).getUint32(packet + 12, true);
  else if (ascii(first, packet, 'OpusHead')) {
    rate = 48_000;
    preSkip = view(first).getUint16(packet + 10, true);
  }
  if (!rate) return undefined;
  // The last page's granule position is the total sample count.
  const tailLength = Math.min(src.size, 65_536);
  const tail = await src.read(src.size - tailLength, tailLength);
  for (let i = tail.length - 27; i >= 0; i--) {
    if (ascii(tail, i, 'OggS')) {
      const v = view(tail);
      const granule = v.getUint32(i + 6, true) + v.getUint32(i + 10, true) * 2 ** 32;
      if (granule <= 0 || granule >= 2 ** 53) return undefined;
      return Math.round((Math.max(0, granule - preSkip) / rate) * 1000);
    }
  }
  return undefined;
}

async function mp4Duration(src: ByteSource): Promise<number | undefined> {
  const box = async (
    start: number,
    end: number,
    type: string,
  ): Promise<[number, number] | undefined> => {
    let offset = start;
    for (let guard = 0; guard < 1000 && offset + 8 <= end; guard++) {
      const h = await src.read(offset, 16);
      if (h.length < 8) return undefined;
      const v = view(h);
      let size = v.getUint32(0);
      let header = 8;
      if (size === 1 && h.length >= 16) {
        size = v.getUint32(8) * 2 ** 32 + v.getUint32(12);
        header = 16;
      } else if (size === 0) size = end - offset;
      if (size < header) return undefined;
      if (ascii(h, 4, type)) return [offset + header, offset + size];
      offset += size;
    }
    return undefined;
  };
  const moov = await box(0, src.size, 'moov');
  if (!moov) return undefined;
  const mvhd = await box(moov[0], moov[1], 'mvhd');
  if (!mvhd) return undefined;
  const body = await src.read(mvhd[0], 32);
  const v = view(body);
  const version = body[0];
  const [timescale, duration] =
    version === 1
      ? [v.getUint32(20), v.getUint32(24) * 2 ** 32 + v.getUint32(28)]
      : [v.getUint32(12), v.getUint32(16)];
  if (!timescale) return undefined;
  return Math.round((duration / timescale) * 1000);
}

const MP3_BITRATES_V1_L3 = [0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320];
const MP3_BITRATES_V2_L3 = [0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160];
const MP3_RATES: Record<number, number[]> = {
  3: [44_100, 48_000, 32_000],
  2: [22_050, 24_000, 16_000],
  0: [11_025, 12_000, 8_000],
};

interface Mp3Frame {
  bitrateKbps: number;
  sampleRate: number;
  samplesPerFrame: number;
  mpeg1: boolean;
  mono: boolean;
}

function mp3FrameHeader(b: Uint8Array, at: number): Mp3Frame | undefined {
  if (b.length < at + 4 || b[at] !== 0xff || ((b[at + 1] ?? 0) & 0xe0) !== 0xe0) return undefined;
  const version = ((b[at + 1] ?? 0) >> 3) & 0x03; // 3 = MPEG1, 2 = MPEG2, 0 = MPEG2.5
  const layer = ((b[at + 1] ?? 0) >> 1) & 0x03; // 1 = Layer III
  const bitrateIndex = ((b[at + 2] ?? 0) >> 4) & 0x0f;
  const rateIndex = ((b[at + 2] ?? 0) >> 2) & 0x03;
  if (
    version === 1 ||
    layer !== 1 ||
    bitrateIndex === 0 ||
    bitrateIndex === 15 ||
    rateIndex === 3
  ) {
    return undefined;
  }
  const mpeg1 = version === 3;
  const bitrateKbps = (mpeg1 ? MP3_BITRATES_V1_L3 : MP3_BITRATES_V2_L3)[bitrateIndex] ?? 0;
  const sampleRate = MP3_RATES[version]?.[rateIndex] ?? 0;
  const mono = (((b[at + 3] ?? 0) >> 6) & 0x03) === 3;
  return { bitrateKbps, sampleRate, samplesPerFrame: mpeg1 ? 1152 : 576, mpeg1, mono };
}

async function mp3Duration(src: ByteSource): Promise<number | undefined> {
  let start = 0;
  const id3 = await src.read(0, 10);
  if (ascii(id3, 0, 'ID3')) {
    // Syncsafe size: 7 bits per byte.
    const size =
      ((id3[6] ?? 0) << 21) | ((id3[7] ?? 0) << 14) | ((id3[8] ?? 0) << 7) | (id3[9] ?? 0);
    start = 10 + size;
  }
  const window = await src.read(start, 4096);
  let at = -1;
  for (let i = 0; i + 4 <= window.length; i++) {
    if (mp3FrameHeader(window, i)) {
      at = i;
      break;
    }
  }
  if (at < 0) return undefined;
  const frame = mp3FrameHeader(window, at)!;
  if (!frame.sampleRate || !frame.bitrateKbps) return undefined;
  // A Xing/Info header in the first frame carries the frame count of a VBR file.
  const sideInfo = frame.mpeg1 ? (frame.mono ? 17 : 32) : frame.mono ? 9 : 17;
  const x = at + 4 + sideInfo;
  if (
    (ascii(window, x, 'Xing') || ascii(window, x, 'Info')) &&
    ((window[x + 7] ?? 0) & 0x01) === 1
  ) {
    const frames = view(window).getUint32(x + 8);
    return Math.round(((frames * frame.samplesPerFrame) / frame.sampleRate) * 1000);
  }
  const audioBytes = src.size - (start + at);
  return Math.round(((audioBytes * 8) / (frame.bitrateKbps * 1000)) * 1000);
}

/**
 * V6: what becomes of Quire's copy of a recording once the speech engine holds it: `keep`
 * (the default for a new workspace: an archive's recording is the record) or
 * `delete-after-recognition` (the clinical rule: the copy goes at once).
 */
export const RECORDING_RETENTIONS = ['keep', 'delete-after-recognition'] as const;
export type RecordingRetention = (typeof RECORDING_RETENTIONS)[number];
