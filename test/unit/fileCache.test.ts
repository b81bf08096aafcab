import { readdir, readFile, utimes } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createFileCache } from '../../blobs/fileCache';
import { makeTempDir, removeDir } from '../support/fixtures';

/** D13: the replica cache is bounded by bytes; the least recently used copies go first. */
let dir: string;
const KB = 1024;
const bytes = (n: number, fill: number) => Buffer.alloc(n, fill);
let fetches: string[];
const source = (key: string, size: number, fill: number) => () => {
  fetches.push(key);
  return Readable.from([bytes(size, fill)]);
};

beforeEach(async () => {
  dir = await makeTempDir('quire-file-cache-');
  fetches = [];
});

afterEach(async () => {
  await removeDir(dir);
});

/** Dates a copy's last use `ageMs` back, as if it had been read then. */
async function age(file: string, ageMs: number) {
  const when = new Date(Date.now() - ageMs);
  await utimes(file, when, when);
}

describe('D13 the replica cache', () => {
  it('D13 a hit is served from disk without fetching; the bytes are the object', async () => {
    const cache = createFileCache({ dir, maxBytes: 100 * KB });
    const first = await cache.pathOf('ws/1/a', source('a', 10 * KB, 1));
    const again = await cache.pathOf('ws/1/a', source('a', 10 * KB, 9));
    expect(again).toBe(first);
    expect(fetches).toEqual(['a']);
    expect((await readFile(first)).equals(bytes(10 * KB, 1))).toBe(true);
  });

  it('D13 past its bound the least recently used copies go, down to nine tenths of it', async () => {
    const cache = createFileCache({ dir, maxBytes: 100 * KB, graceMs: 1_000 });
    for (const [i, key] of ['a', 'b', 'c'].entries()) {
      const copy = await cache.pathOf(`ws/1/${key}`, source(key, 30 * KB, i));
      await age(copy, (10 - i) * 60_000);
    }
    expect(await cache.evict()).toEqual({ removedFiles: 0, removedBytes: 0, keptBytes: 90 * KB });
    // 'a' is the oldest copy, but it is read again now: 'b' becomes the least recently used,
    // and the download that passes the bound evicts it.
    await cache.pathOf('ws/1/a', source('a', 30 * KB, 0));
    await cache.pathOf('ws/1/d', source('d', 30 * KB, 3));
    expect(fetches).toEqual(['a', 'b', 'c', 'd']);
    expect((await readdir(dir)).sort()).toEqual(['ws_1_a', 'ws_1_c', 'ws_1_d']);
    // Several go when one is not enough: 'c' and 'a' (now old) for a 60 KB object.
    await age(path.join(dir, 'ws_1_a'), 5 * 60_000);
    await age(path.join(dir, 'ws_1_d'), 4 * 60_000);
    await cache.pathOf('ws/1/e', source('e', 60 * KB, 5));
    expect((await readdir(dir)).sort()).toEqual(['ws_1_d', 'ws_1_e']);
  });

  it('D13 a copy used within the grace period stays even over the bound', async () => {
    const cache = createFileCache({ dir, maxBytes: 50 * KB, graceMs: 60_000 });
    await cache.pathOf('ws/1/a', source('a', 40 * KB, 1));
    await cache.pathOf('ws/1/b', source('b', 40 * KB, 2));
    expect((await readdir(dir)).sort()).toEqual(['ws_1_a', 'ws_1_b']);
    const report = await cache.evict(Date.now() + 120_000);
    expect(report.removedFiles).toBe(1);
  });
});
