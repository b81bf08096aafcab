import { deflateSync } from 'node:zlib';

/**
 * Media files built byte by byte, so tests need no tools and every header field is known.
 * Images carry valid headers (the ingest never decodes pixels); audio carries the headers
 * durations are read from and, for WAV, real PCM samples.
 */

const u32be = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n >>> 0);
  return b;
};

function crc32(buf: Uint8Array): number {
  let c = ~0;
  for (const byte of buf) {
    c ^= byte;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0xedb88320 : c >>> 1;
  }
  return ~c >>> 0;
}

function pngChunk(type: string, data: Uint8Array): Buffer {
  const typed = Buffer.concat([Buffer.from(type, 'ascii'), data]);
  return Buffer.concat([u32be(data.length), typed, u32be(crc32(typed))]);
}

/** A real, decodable grey PNG; `declared` overrides the header's size (a decompression bomb). */
export function png(
  width: number,
  height: number,
  declared?: { width: number; height: number },
): Buffer {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(declared?.width ?? width, 0);
  ihdr.writeUInt32BE(declared?.height ?? height, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 0; // greyscale
  const raw = Buffer.alloc((width + 1) * height, 0x80);
  for (let y = 0; y < height; y++) raw[y * (width + 1)] = 0; // filter byte per row
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    pngChunk('IHDR', ihdr),
    pngChunk('IDAT', deflateSync(raw)),
    pngChunk('IEND', Buffer.alloc(0)),
  ]);
}

/** JPEG markers: SOI, APP0 (JFIF), an APP1 of `padding` bytes, SOF0 with the size, EOI. */
export function jpeg(width: number, height: number, padding = 0): Buffer {
  const app0 = Buffer.from([
    0xff, 0xe0, 0x00, 0x10, 0x4a, 0x46, 0x49, 0x46, 0x00, 1, 1, 0, 0, 1, 0, 1, 0, 0,
  ]);
  const app1Body = Buffer.alloc(Math.min(padding, 65_000), 0x20);
  const app1 = Buffer.concat([
    Buffer.from([0xff, 0xe1]),
    Buffer.from([(app1Body.length + 2) >> 8, (app1Body.length + 2) & 0xff]),
    app1Body,
  ]);
  const sof = Buffer.from([
    0xff,
    0xc0,
    0x00,
    0x0b,
    8,
    height >> 8,
    height & 0xff,
    width >> 8,
    width & 0xff,
    1,
    1,
    0x11,
    0,
  ]);
  return Buffer.concat([Buffer.from([0xff, 0xd8]), app0, app1, sof, Buffer.from([0xff, 0xd9])]);
}

/** Little-endian TIFF whose IFD follows `dataBytes` of strip data (libtiff's usual layout). */
export function tiff(width: number, height: number, dataBytes = 64): Buffer {
  const header = Buffer.alloc(8);
  header.write('II', 0, 'ascii');
  header.writeUInt16LE(42, 2);
  const ifdOffset = 8 + dataBytes;
  header.writeUInt32LE(ifdOffset, 4);
  const entries: Array<[number, number, number]> = [
    [256, 4, width],
    [257, 4, height],
    [258, 3, 8],
    [262, 3, 1],
  ];
  const ifd = Buffer.alloc(2 + entries.length * 12 + 4);
  ifd.writeUInt16LE(entries.length, 0);
  entries.forEach(([tag, type, value], i) => {
    const o = 2 + i * 12;
    ifd.writeUInt16LE(tag, o);
    ifd.writeUInt16LE(type, o + 2);
    ifd.writeUInt32LE(1, o + 4);
    if (type === 3) ifd.writeUInt16LE(value, o + 8);
    else ifd.writeUInt32LE(value, o + 8);
  });
  return Buffer.concat([header, Buffer.alloc(dataBytes, 0x7f), ifd]);
}

/** An extended (VP8X) WebP header with the canvas size. */
export function webp(width: number, height: number): Buffer {
  const vp8x = Buffer.alloc(10);
  vp8x.writeUIntLE(width - 1, 4, 3);
  vp8x.writeUIntLE(height - 1, 7, 3);
  const chunk = Buffer.concat([Buffer.from('VP8X'), Buffer.from([10, 0, 0, 0]), vp8x]);
  const body = Buffer.concat([Buffer.from('WEBP'), chunk]);
  const riff = Buffer.alloc(8);
  riff.write('RIFF', 0, 'ascii');
  riff.writeUInt32LE(body.length, 4);
  return Buffer.concat([riff, body]);
}

/** A real mono 16-bit PCM WAV of silence. */
export function wav(durationMs: number, sampleRate = 8000): Buffer {
  const dataBytes = Math.round((durationMs / 1000) * sampleRate) * 2;
  const b = Buffer.alloc(44 + dataBytes);
  b.write('RIFF', 0, 'ascii');
  b.writeUInt32LE(36 + dataBytes, 4);
  b.write('WAVE', 8, 'ascii');
  b.write('fmt ', 12, 'ascii');
  b.writeUInt32LE(16, 16);
  b.writeUInt16LE(1, 20);
  b.writeUInt16LE(1, 22);
  b.writeUInt32LE(sampleRate, 24);
  b.writeUInt32LE(sampleRate * 2, 28);
  b.writeUInt16LE(2, 32);
  b.writeUInt16LE(16, 34);
  b.write('data', 36, 'ascii');
  b.writeUInt32LE(dataBytes, 40);
  return b;
}

/** A WAV header claiming `durationMs` of audio with only a few bytes present... */
export function wavHeaderOnly(durationMs: number, sampleRate = 8000): Buffer {
  const w = wav(10, sampleRate);
  w.writeUInt32LE(Math.round((durationMs / 1000) * sampleRate) * 2, 40);
  return w;
}

/** FLAC signature and STREAMINFO (last metadata block), no frames. */
export function flac(durationMs: number, sampleRate = 44_100): Buffer {
  const total = Math.round((durationMs / 1000) * sampleRate);
  const info = Buffer.alloc(34);
  info.writeUInt16BE(4096, 0);
  info.writeUInt16BE(4096, 2);
  // sample rate (20 bits) | channels-1 (3) | bps-1 (5) | total samples (36)
  info[10] = (sampleRate >> 12) & 0xff;
  info[11] = (sampleRate >> 4) & 0xff;
  info[12] = ((sampleRate & 0x0f) << 4) | (0 << 1) | (15 >> 4);
  info[13] = ((15 & 0x0f) << 4) | Math.floor(total / 2 ** 32);
  info.writeUInt32BE(total % 2 ** 32, 14);
  return Buffer.concat([
    Buffer.from('fLaC'),
    Buffer.from([0x80, 0, 0, 34]),
    info,
    Buffer.alloc(16),
  ]);
}

/** CBR MPEG-1 Layer III, 128 kb/s, 44.1 kHz: 417-byte frames, 26.12 ms each, after an ID3 tag. */
export function mp3(frames: number): Buffer {
  const id3 = Buffer.from([0x49, 0x44, 0x33, 3, 0, 0, 0, 0, 0, 0]);
  const frame = Buffer.alloc(417);
  frame[0] = 0xff;
  frame[1] = 0xfb;
  frame[2] = 0x90;
  frame[3] = 0x64;
  return Buffer.concat([id3, ...Array.from({ length: frames }, () => frame)]);
}

function oggPage(granule: number, packet: Buffer, flags: number): Buffer {
  const header = Buffer.alloc(27);
  header.write('OggS', 0, 'ascii');
  header[5] = flags;
  header.writeUInt32LE(granule % 2 ** 32, 6);
  header.writeUInt32LE(Math.floor(granule / 2 ** 32), 10);
  header[26] = 1;
  return Buffer.concat([header, Buffer.from([packet.length]), packet]);
}

/** Ogg Vorbis: identification header page, then a last page whose granule is the length. */
export function ogg(durationMs: number, sampleRate = 48_000): Buffer {
  const id = Buffer.alloc(30);
  id[0] = 1;
  id.write('vorbis', 1, 'ascii');
  id.writeUInt8(1, 11);
  id.writeUInt32LE(sampleRate, 12);
  const samples = Math.round((durationMs / 1000) * sampleRate);
  return Buffer.concat([oggPage(0, id, 2), oggPage(samples, Buffer.alloc(10), 4)]);
}

function box(type: string, ...children: Buffer[]): Buffer {
  const body = Buffer.concat(children);
  return Buffer.concat([u32be(8 + body.length), Buffer.from(type, 'ascii'), body]);
}

/** M4A: ftyp, an mdat of `dataBytes`, then moov/mvhd (moov at the end, as many encoders do). */
export function m4a(durationMs: number, dataBytes = 128): Buffer {
  const mvhd = Buffer.alloc(100);
  mvhd.writeUInt32BE(1000, 12); // timescale
  mvhd.writeUInt32BE(durationMs, 16);
  return Buffer.concat([
    box('ftyp', Buffer.from('M4A '), u32be(0), Buffer.from('M4A isom')),
    box('mdat', Buffer.alloc(dataBytes)),
    box('moov', box('mvhd', mvhd)),
  ]);
}

export interface Part {
  name: string;
  value: string | Uint8Array;
  filename?: string;
  contentType?: string;
}

const BOUNDARY = '----quire-test-boundary-7c1d';

/** A multipart/form-data body, exactly as a browser would send it. */
export function multipartBody(parts: readonly Part[]): Buffer {
  const chunks: Buffer[] = [];
  for (const part of parts) {
    const disposition =
      part.filename !== undefined
        ? `form-data; name="${part.name}"; filename="${part.filename}"`
        : `form-data; name="${part.name}"`;
    const type =
      part.filename !== undefined
        ? `Content-Type: ${part.contentType ?? 'application/octet-stream'}\r\n`
        : '';
    chunks.push(Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: ${disposition}\r\n${type}\r\n`));
    chunks.push(typeof part.value === 'string' ? Buffer.from(part.value) : Buffer.from(part.value));
    chunks.push(Buffer.from('\r\n'));
  }
  chunks.push(Buffer.from(`--${BOUNDARY}--\r\n`));
  return Buffer.concat(chunks);
}

export function uploadRequest(
  parts: readonly Part[],
  headers: Record<string, string> = {},
): Request {
  const body = multipartBody(parts);
  return new Request('http://localhost/api/v1/workspaces/1/batches', {
    method: 'POST',
    headers: {
      'content-type': `multipart/form-data; boundary=${BOUNDARY}`,
      'content-length': String(body.length),
      ...headers,
    },
    body: new Uint8Array(body),
  });
}

export const file = (value: Uint8Array, filename = 'page.bin'): Part => ({
  name: 'files[]',
  value,
  filename,
});

/** A streamed request body of `totalBytes` bytes for one WAV file, never held in memory. */
export function streamedWavRequest(totalBytes: number, sampleRate = 48_000): Request {
  const header = wav(0, sampleRate);
  const dataBytes = totalBytes - header.length;
  header.writeUInt32LE(36 + dataBytes, 4);
  header.writeUInt32LE(dataBytes, 40);
  const head = Buffer.from(
    `--${BOUNDARY}\r\nContent-Disposition: form-data; name="files[]"; filename="long.wav"\r\nContent-Type: audio/wav\r\n\r\n`,
  );
  const tail = Buffer.from(`\r\n--${BOUNDARY}--\r\n`);
  const block = Buffer.alloc(256 * 1024, 0);
  let sent = 0;
  let stage = 0;
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (stage === 0) {
        controller.enqueue(Buffer.concat([head, header]));
        stage = 1;
      } else if (stage === 1) {
        const n = Math.min(block.length, dataBytes - sent);
        controller.enqueue(block.subarray(0, n));
        sent += n;
        if (sent >= dataBytes) stage = 2;
      } else {
        controller.enqueue(tail);
        controller.close();
      }
    },
  });
  return new Request('http://localhost/api/v1/workspaces/1/batches', {
    method: 'POST',
    headers: {
      'content-type': `multipart/form-data; boundary=${BOUNDARY}`,
      'content-length': String(head.length + totalBytes + tail.length),
    },
    body: stream,
    duplex: 'half',
  } as RequestInit);
}
