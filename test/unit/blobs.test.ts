import { createHash } from 'node:crypto';
import {
  lutimes,
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  rm,
  stat,
  symlink,
  utimes,
  writeFile,
} from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  BlobTooLargeError,
  canonicalKeyFor,
  createLocalBlobStore,
  InvalidBlobKeyError,
  newUploadId,
  TEMPORARY_PREFIX,
  temporaryKeyFor,
} from '../../blobs';
import { CLEANUP_BACKOFF_CAP_MS, cleanupBackoffMs } from '../../db/blobs';

async function* chunks(...parts: string[]): AsyncIterable<Uint8Array> {
  for (const part of parts) yield Buffer.from(part);
}

let root: string;
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'quire-blobs-'));
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

describe('U1 local blob store', () => {
  it('U1 identity is SHA-256 of the bytes plus a random UUID, so identical bytes get distinct keys', async () => {
    const store = createLocalBlobStore(root);
    const keys: string[] = [];
    for (let i = 0; i < 2; i++) {
      const uploadId = newUploadId();
      const temp = temporaryKeyFor(7, uploadId);
      const written = await store.writeTemporary(temp, chunks('same ', 'bytes'));
      expect(written).toEqual({
        sha256: createHash('sha256').update('same bytes').digest('hex'),
        size: 10,
      });
      const key = canonicalKeyFor(7, written.sha256, uploadId);
      await store.promote(temp, key);
      keys.push(key);
    }
    expect(keys[0]).not.toBe(keys[1]);
    for (const key of keys) {
      expect(key).toMatch(/^ws\/7\/[0-9a-f]{64}-[0-9a-f-]{36}$/);
      expect(await readFile(await store.localPath(key), 'utf8')).toBe('same bytes');
    }
  });

  it('U1 bytes go to a .quire-upload-* temporary in the same directory, renamed only when complete', async () => {
    const store = createLocalBlobStore(root);
    const uploadId = newUploadId();
    const temp = temporaryKeyFor(3, uploadId);
    let seenDuringWrite: string[] = [];
    async function* slow() {
      yield Buffer.from('part one ');
      seenDuringWrite = await readdir(join(root, 'ws', '3'));
      yield Buffer.from('part two');
    }
    const written = await store.writeTemporary(temp, slow());
    expect(seenDuringWrite).toEqual([`${TEMPORARY_PREFIX}${uploadId}`]);
    const key = canonicalKeyFor(3, written.sha256, uploadId);
    await store.promote(temp, key);
    expect(await readdir(join(root, 'ws', '3'))).toEqual([key.split('/')[2]]);
    expect(await store.exists(temp)).toBe(false);
    expect(Buffer.from(await store.readRange(key, 5, 100)).toString()).toBe('one part two');
    expect((await stat(await store.localPath(key))).mode & 0o777).toBe(0o600);
    const listed = [];
    for await (const o of store.list()) listed.push(o.key);
    expect(listed).toEqual([key]);
  });

  it('U4 a write past maxBytes fails and leaves no temporary', async () => {
    const store = createLocalBlobStore(root);
    const temp = temporaryKeyFor(1, newUploadId());
    await expect(
      store.writeTemporary(temp, chunks('12345', '67890'), { maxBytes: 8 }),
    ).rejects.toBeInstanceOf(BlobTooLargeError);
    expect(await readdir(join(root, 'ws', '1'))).toEqual([]);
  });

  it('U3 delete is idempotent', async () => {
    const store = createLocalBlobStore(root);
    const uploadId = newUploadId();
    const temp = temporaryKeyFor(1, uploadId);
    const { sha256 } = await store.writeTemporary(temp, chunks('x'));
    const key = canonicalKeyFor(1, sha256, uploadId);
    await store.promote(temp, key);
    await store.delete(key);
    await store.delete(key);
    expect(await store.exists(key)).toBe(false);
  });

  it('U1 keys cannot leave the store directory', async () => {
    const store = createLocalBlobStore(root);
    for (const key of ['../etc/passwd', '/abs', 'ws//x', 'ws/1/../../x', 'ws/1/a b']) {
      await expect(store.delete(key)).rejects.toBeInstanceOf(InvalidBlobKeyError);
    }
  });
});

describe('U1 stale temporaries', () => {
  it('U1 removes only stale regular temporaries: fresh ones, links, directories and canonical names stay', async () => {
    const store = createLocalBlobStore(root);
    const dir = join(root, 'ws', '1');
    await mkdir(dir, { recursive: true });
    const old = new Date(Date.now() - 2 * 60 * 60 * 1000);
    const stale = join(dir, `${TEMPORARY_PREFIX}stale`);
    const fresh = join(dir, `${TEMPORARY_PREFIX}fresh`);
    const canonical = join(dir, `${'a'.repeat(64)}-${newUploadId()}`);
    const outside = join(root, 'outside-target');
    const link = join(dir, `${TEMPORARY_PREFIX}link`);
    const folder = join(dir, `${TEMPORARY_PREFIX}folder`);
    await writeFile(stale, 'old bytes');
    await writeFile(fresh, 'new bytes');
    await writeFile(canonical, 'kept');
    await writeFile(outside, 'not ours');
    await symlink(outside, link);
    await mkdir(folder);
    await writeFile(join(folder, 'inner'), 'x');
    for (const path of [stale, canonical, outside, folder]) await utimes(path, old, old);
    await lutimes(link, old, old);

    expect(await store.sweepStaleTemporaries()).toEqual({ removed: 1 });
    const left = (await readdir(dir)).sort();
    expect(left).toEqual(
      [
        `${TEMPORARY_PREFIX}folder`,
        `${TEMPORARY_PREFIX}fresh`,
        `${TEMPORARY_PREFIX}link`,
        canonical.split('/').pop(),
      ].sort(),
    );
    expect(await readFile(outside, 'utf8')).toBe('not ours');
    // An injected clock two hours on makes the fresh one stale too; links and folders stay.
    const later = new Date(Date.now() + 2 * 60 * 60 * 1000);
    expect(await store.sweepStaleTemporaries(undefined, later)).toEqual({ removed: 1 });
    expect((await readdir(dir)).sort()).toEqual(
      [`${TEMPORARY_PREFIX}folder`, `${TEMPORARY_PREFIX}link`, canonical.split('/').pop()].sort(),
    );
  });
});

describe('U3 cleanup backoff', () => {
  it('U3 retries back off exponentially and never wait more than one hour', () => {
    expect(cleanupBackoffMs(1, () => 1)).toBe(30_000);
    expect(cleanupBackoffMs(2, () => 1)).toBe(60_000);
    for (const attempts of [10, 50, 1000, 1_000_000]) {
      expect(cleanupBackoffMs(attempts, () => 1)).toBe(CLEANUP_BACKOFF_CAP_MS);
      expect(cleanupBackoffMs(attempts, () => 0)).toBeLessThanOrEqual(CLEANUP_BACKOFF_CAP_MS);
    }
  });
});
