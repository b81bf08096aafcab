import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough, type Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type BlobStore,
  canonicalKeyFor,
  createLocalBlobStore,
  newUploadId,
  temporaryKeyFor,
} from '../../blobs';
import { mediaResponse } from '../../web/lib/media';

/**
 * The console's media route (SPEC §9 C, U): byte ranges for the audio player, read from the
 * blob store only as far as the response goes. A store wrapper counts every byte that leaves
 * the store, whichever way it is read.
 */
const SIZE = 8 * 1024 * 1024;
let root: string;
let bytes: Buffer;
let key: string;
let store: BlobStore;
let readFromStore = 0;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'quire-media-'));
  const local = createLocalBlobStore(root);
  bytes = randomBytes(SIZE);
  const uploadId = newUploadId();
  const temp = temporaryKeyFor(1, uploadId);
  const written = await local.writeTemporary(
    temp,
    (async function* () {
      for (let at = 0; at < SIZE; at += 1 << 20) yield bytes.subarray(at, at + (1 << 20));
    })(),
  );
  key = canonicalKeyFor(1, written.sha256, uploadId);
  await local.promote(temp, key);
  store = {
    ...local,
    async readRange(k, offset, length) {
      const out = await local.readRange(k, offset, length);
      readFromStore += out.byteLength;
      return out;
    },
    read(k, range) {
      // Counted as the bytes pass, with backpressure kept (no 'data' listener on the source).
      const counter = new PassThrough({
        transform(chunk: Buffer, _encoding, done) {
          readFromStore += chunk.length;
          done(null, chunk);
        },
      });
      const source: Readable = local.read(k, range);
      source.on('error', (error) => counter.destroy(error));
      return source.pipe(counter);
    },
  };
});

afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

const media = () => ({ blobKey: key, mediaType: 'audio/wav', sizeBytes: SIZE });

async function body(response: Response): Promise<Buffer> {
  return Buffer.from(await response.arrayBuffer());
}

describe('media ranges', () => {
  it('C an open range on a long recording reads from the store only what the client has taken, not the whole blob', async () => {
    readFromStore = 0;
    const response = mediaResponse(store, media(), 'bytes=0-');
    expect(response.status).toBe(206);
    expect(response.headers.get('content-range')).toBe(`bytes 0-${SIZE - 1}/${SIZE}`);
    expect(response.headers.get('content-length')).toBe(String(SIZE));
    // The player takes the first chunk, then seeks elsewhere (closes this response).
    const reader = response.body!.getReader();
    const first = await reader.read();
    expect(first.done).toBe(false);
    expect(Buffer.from(first.value!)).toEqual(bytes.subarray(0, first.value!.byteLength));
    await new Promise((resolve) => setTimeout(resolve, 100));
    await reader.cancel();
    expect(readFromStore).toBeGreaterThan(0);
    expect(readFromStore).toBeLessThan(1024 * 1024);
  });

  it('C a closed range returns exactly its bytes and reads no more than it returns', async () => {
    readFromStore = 0;
    const response = mediaResponse(store, media(), 'bytes=1000-1999');
    expect(response.status).toBe(206);
    expect(response.headers.get('content-range')).toBe(`bytes 1000-1999/${SIZE}`);
    expect(await body(response)).toEqual(bytes.subarray(1000, 2000));
    expect(readFromStore).toBe(1000);

    readFromStore = 0;
    const suffix = mediaResponse(store, media(), 'bytes=-10');
    expect(suffix.headers.get('content-range')).toBe(`bytes ${SIZE - 10}-${SIZE - 1}/${SIZE}`);
    expect(await body(suffix)).toEqual(bytes.subarray(SIZE - 10));
    expect(readFromStore).toBe(10);

    const clipped = mediaResponse(store, media(), `bytes=${SIZE - 5}-${SIZE + 100}`);
    expect(clipped.headers.get('content-range')).toBe(`bytes ${SIZE - 5}-${SIZE - 1}/${SIZE}`);
    expect(await body(clipped)).toEqual(bytes.subarray(SIZE - 5));
  });

  it('C a range past the end is 416 with the size; no range streams the whole blob', async () => {
    const past = mediaResponse(store, media(), `bytes=${SIZE}-`);
    expect(past.status).toBe(416);
    expect(past.headers.get('content-range')).toBe(`bytes */${SIZE}`);
    const whole = mediaResponse(store, media(), null);
    expect(whole.status).toBe(200);
    expect(whole.headers.get('content-length')).toBe(String(SIZE));
    expect((await body(whole)).equals(bytes)).toBe(true);
  });
});
