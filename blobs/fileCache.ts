import { randomUUID } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, readdir, rename, rm, stat, utimes } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';

/**
 * D13: the replica's copies of objects (an engine needs a file; the Image API reads tiles from
 * a derivative on disk) in a directory bounded by bytes. A copy's modification time is its last
 * use (touched on every hit), so every process sharing the directory sees the same order; once
 * the copies pass `maxBytes`, the least recently used go until they fit in nine tenths of it.
 * A copy used within `graceMs` is never evicted, so a path just handed to a reader is still
 * there when the reader opens it.
 */
export interface FileCacheOptions {
  dir: string;
  maxBytes: number;
  graceMs?: number;
}

export interface FileCache {
  /** The local path of `key`'s copy, fetched with `fetch` when it is not here. */
  pathOf(key: string, fetch: () => Readable): Promise<string>;
  /** Removes the least recently used copies until the directory fits; returns what went. */
  evict(now?: number): Promise<{ removedFiles: number; removedBytes: number; keptBytes: number }>;
}

const PARTIAL = '.part';

export function createFileCache(options: FileCacheOptions): FileCache {
  const graceMs = options.graceMs ?? 60_000;
  // Bytes this process added since it last measured the directory: a measurement is due when
  // they could have taken it past the bound.
  let addedSinceScan = Number.POSITIVE_INFINITY;
  let lastScanBytes = 0;
  let evicting: Promise<unknown> | undefined;

  const cache: FileCache = {
    async pathOf(key, fetch) {
      await mkdir(options.dir, { recursive: true, mode: 0o700 });
      const path = join(options.dir, key.replace(/\//g, '_'));
      const now = new Date();
      // Canonical keys name immutable bytes, so a complete copy already here is the object.
      const hit = await utimes(path, now, now).then(
        () => true,
        () => false,
      );
      if (hit) return path;
      // Downloaded under a name of its own and renamed, so two readers fetching the same
      // object at once never read each other's half-written file.
      const partial = `${path}.${randomUUID()}${PARTIAL}`;
      try {
        await pipeline(fetch(), createWriteStream(partial, { mode: 0o600 }));
        const { size } = await stat(partial);
        await rename(partial, path);
        addedSinceScan += size;
      } catch (error) {
        await rm(partial, { force: true });
        throw error;
      }
      if (lastScanBytes + addedSinceScan > options.maxBytes && !evicting) {
        evicting = cache.evict().finally(() => {
          evicting = undefined;
        });
        await evicting;
      }
      return path;
    },

    async evict(now = Date.now()) {
      let names: string[];
      try {
        names = await readdir(options.dir);
      } catch {
        return { removedFiles: 0, removedBytes: 0, keptBytes: 0 };
      }
      const copies: Array<{ path: string; size: number; usedAt: number }> = [];
      for (const name of names) {
        const path = join(options.dir, name);
        const info = await stat(path).catch(() => undefined);
        if (!info?.isFile()) continue;
        // A download in progress is another reader's; a stale one (its reader died) goes.
        if (name.endsWith(PARTIAL) && now - info.mtimeMs < 60 * 60_000) continue;
        copies.push({ path, size: info.size, usedAt: info.mtimeMs });
      }
      let total = copies.reduce((sum, copy) => sum + copy.size, 0);
      let removedFiles = 0;
      let removedBytes = 0;
      if (total > options.maxBytes) {
        const target = options.maxBytes * 0.9;
        copies.sort((a, b) => a.usedAt - b.usedAt);
        for (const copy of copies) {
          if (total <= target) break;
          if (now - copy.usedAt < graceMs) break;
          await rm(copy.path, { force: true });
          total -= copy.size;
          removedFiles++;
          removedBytes += copy.size;
        }
      }
      lastScanBytes = total;
      addedSinceScan = 0;
      return { removedFiles, removedBytes, keptBytes: total };
    },
  };
  return cache;
}
