import { describe, expect, it } from 'vitest';
import {
  bufferSource,
  DEFAULT_MEDIA_LIMITS,
  inspectMedia,
  MediaRejection,
  sniffMediaType,
} from '../../core/media';
import { httpErrorOf } from '../../web/lib/errors';
import {
  flac,
  jpeg,
  m4a,
  mp3,
  ogg,
  png,
  tiff,
  wav,
  wavHeaderOnly,
  webp,
} from '../support/uploadFixtures';

const inspect = (bytes: Uint8Array, limits = DEFAULT_MEDIA_LIMITS) =>
  inspectMedia(bufferSource(bytes), limits);

/** The rejection's code, and the HTTP status the API answers it with (SPEC §7). */
async function rejection(
  bytes: Uint8Array,
  limits = DEFAULT_MEDIA_LIMITS,
): Promise<{ code: string; status: number | undefined }> {
  try {
    await inspect(bytes, limits);
  } catch (error) {
    if (error instanceof MediaRejection)
      return { code: error.code, status: httpErrorOf(error)?.status };
    throw error;
  }
  throw new Error('expected a rejection');
}

describe('U4 media type by magic bytes', () => {
  it.each([
    ['image/png', png(3, 2)],
    ['image/jpeg', jpeg(10, 20)],
    ['image/tiff', tiff(10, 20)],
    ['image/webp', webp(10, 20)],
    ['audio/wav', wav(100)],
    ['audio/flac', flac(1000)],
    ['audio/mpeg', mp3(3)],
    ['audio/ogg', ogg(1000)],
    ['audio/mp4', m4a(1000)],
  ])('U4 recognises %s', (type, bytes) => {
    expect(sniffMediaType(bytes)).toBe(type);
  });

  it('U4 ignores names and declared types: text, GIF, PDF and ZIP are unsupported', async () => {
    for (const bytes of [
      Buffer.from('hello, this is not an image at all'),
      Buffer.from('GIF89a\x01\x00\x01\x00\x00\x00\x00'),
      Buffer.from('%PDF-1.7\n%\xe2\xe3\xcf\xd3\n'),
      Buffer.from('PK\x03\x04\x14\x00\x00\x00\x08\x00'),
      Buffer.from('RIFF\x10\x00\x00\x00AVI LIST'),
    ]) {
      const error = await rejection(bytes);
      expect(error.code).toBe('unsupported_media_type');
      expect(error.status).toBe(415);
    }
  });
});

describe('U4 dimensions and durations from headers', () => {
  it('U4 reads image dimensions of every image type without decoding', async () => {
    expect(await inspect(png(3, 2))).toMatchObject({
      mediaType: 'image/png',
      kind: 'image',
      width: 3,
      height: 2,
    });
    expect(await inspect(jpeg(640, 480, 5000))).toMatchObject({ width: 640, height: 480 });
    expect(await inspect(tiff(1200, 900, 300_000))).toMatchObject({ width: 1200, height: 900 });
    expect(await inspect(webp(800, 600))).toMatchObject({ width: 800, height: 600 });
  });

  it('U4 reads audio durations from WAV, FLAC, OGG, M4A and MP3 headers', async () => {
    expect(await inspect(wav(1500))).toMatchObject({
      mediaType: 'audio/wav',
      kind: 'audio',
      durationMs: 1500,
    });
    expect(await inspect(flac(61_000))).toMatchObject({ durationMs: 61_000 });
    expect(await inspect(ogg(2500))).toMatchObject({ durationMs: 2500 });
    expect(await inspect(m4a(4321, 10_000))).toMatchObject({ durationMs: 4321 });
    const mp3Info = await inspect(mp3(100));
    expect(mp3Info.durationMs).toBeGreaterThan(2500);
    expect(mp3Info.durationMs).toBeLessThan(2700);
  });
});

describe('U4 rejections carry stable codes', () => {
  it('U4 an empty file is empty_file', async () => {
    const error = await rejection(new Uint8Array());
    expect([error.code, error.status]).toEqual(['empty_file', 422]);
  });

  it('U4 a decompression bomb is rejected by its declared pixels (image_too_large)', async () => {
    // 46 bytes of file claiming a 100000 x 100000 canvas.
    const bomb = png(1, 1, { width: 100_000, height: 100_000 });
    expect(bomb.length).toBeLessThan(200);
    const error = await rejection(bomb);
    expect([error.code, error.status]).toEqual(['image_too_large', 422]);
    expect((await rejection(jpeg(60_000, 60_000))).code).toBe('image_too_large');
    expect((await rejection(tiff(200_000, 10))).code).toBe('image_too_large');
    expect((await rejection(webp(16_000_000, 16_000))).code).toBe('image_too_large');
  });

  it('U4 a recording longer than the limit is audio_too_long, from its header alone', async () => {
    const limits = { ...DEFAULT_MEDIA_LIMITS, maxAudioDurationMs: 60_000 };
    expect((await rejection(flac(61_000), limits)).code).toBe('audio_too_long');
    expect((await rejection(m4a(120_000), limits)).code).toBe('audio_too_long');
    expect((await rejection(ogg(90_000), limits)).code).toBe('audio_too_long');
    expect(await inspect(flac(59_000), limits)).toMatchObject({ durationMs: 59_000 });
    // A WAV header claiming hours with seconds of bytes: the bytes present decide.
    expect(await inspect(wavHeaderOnly(10 * 3_600_000), limits)).toMatchObject({
      mediaType: 'audio/wav',
    });
  });

  it('U4 a file above the byte limit is file_too_large (413)', async () => {
    const error = await rejection(png(10, 10), { ...DEFAULT_MEDIA_LIMITS, maxFileBytes: 20 });
    expect([error.code, error.status]).toEqual(['file_too_large', 413]);
  });

  it('U4 a truncated header is malformed_media', async () => {
    expect((await rejection(png(5, 5).subarray(0, 20))).code).toBe('malformed_media');
    expect((await rejection(jpeg(5, 5).subarray(0, 12))).code).toBe('malformed_media');
    expect((await rejection(tiff(5, 5, 10).subarray(0, 12))).code).toBe('malformed_media');
    expect((await rejection(png(0, 0))).code).toBe('malformed_media');
  });
});
