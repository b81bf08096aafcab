import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { lstat, mkdir, open, readdir, rename, unlink } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { Readable } from 'node:stream';
import {
  assertValidKey,
  type BlobStore,
  BlobTooLargeError,
  isTemporaryKey,
  type ListOptions,
  STALE_TEMPORARY_AGE_MS,
  type StoredObject,
  TEMPORARY_PREFIX,
  type WriteOptions,
  type WrittenTemporary,
} from './store';

/** The default blob store: a directory, one file per key, written with 0600 permissions. */
export function createLocalBlobStore(root: string): BlobStore & { readonly root: string } {
  const pathOf = (key: string) => {
    assertValidKey(key);
    return join(root, ...key.split('/'));
  };

  async function fsyncDirectory(dir: string) {
    const handle = await open(dir, 'r');
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
  }

  /**
   * The files under `dir` in key order: a directory's entries sorted as their keys sort (a
   * directory as its name and a slash), and whole directories whose keys all come before
   * `after` not read at all, so a sweep resumes where it stopped (D13).
   */
  async function* walk(
    dir: string,
    after?: string,
    prefix = '',
  ): AsyncIterable<{ path: string; name: string; key: string }> {
    let entries: import('node:fs').Dirent[];
    try {
      entries = await readdir(dir, { withFileTypes: true });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw error;
    }
    const sorted = entries
      .map((entry) => ({ entry, key: `${prefix}${entry.name}${entry.isDirectory() ? '/' : ''}` }))
      .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    for (const { entry, key } of sorted) {
      const path = join(dir, entry.name);
      // Dirent types come from lstat: a symlink is neither a directory nor a file here,
      // so the walk never leaves the store through a link.
      if (entry.isDirectory()) {
        if (after !== undefined && key < after && !after.startsWith(key)) continue;
        yield* walk(path, after, key);
      } else if (after === undefined || key > after) {
        yield { path, name: entry.name, key };
      }
    }
  }

  return {
    kind: 'local',
    root,

    async writeTemporary(
      temporaryKey,
      source,
      options: WriteOptions = {},
    ): Promise<WrittenTemporary> {
      if (!isTemporaryKey(temporaryKey)) throw new Error('writeTemporary needs a temporary key');
      const path = pathOf(temporaryKey);
      await mkdir(dirname(path), { recursive: true, mode: 0o700 });
      // 'wx': never write through an existing name (a planted link or another upload).
      const handle = await open(path, 'wx', 0o600);
      const hash = createHash('sha256');
      let size = 0;
      try {
        for await (const chunk of source) {
          size += chunk.length;
          if (options.maxBytes !== undefined && size > options.maxBytes) {
            throw new BlobTooLargeError(options.maxBytes);
          }
          if (options.onChunk) await options.onChunk(chunk, size);
          hash.update(chunk);
          let offset = 0;
          while (offset < chunk.length) {
            const { bytesWritten } = await handle.write(chunk, offset, chunk.length - offset);
            offset += bytesWritten;
          }
        }
        // Durable before it can be renamed: a canonical name never points at lost bytes.
        await handle.sync();
      } catch (error) {
        await handle.close().catch(() => {});
        await unlink(path).catch(() => {});
        throw error;
      }
      await handle.close();
      return { sha256: hash.digest('hex'), size };
    },

    async promote(temporaryKey, key) {
      const from = pathOf(temporaryKey);
      const to = pathOf(key);
      if (dirname(from) !== dirname(to))
        throw new Error('a temporary is promoted within its directory');
      await rename(from, to);
      // The rename is durable only once the directory entry is.
      await fsyncDirectory(dirname(to));
    },

    async readRange(key, offset, length) {
      const handle = await open(pathOf(key), 'r');
      try {
        const buffer = Buffer.alloc(length);
        const { bytesRead } = await handle.read(buffer, 0, length, offset);
        return buffer.subarray(0, bytesRead);
      } finally {
        await handle.close();
      }
    },

    read(key, range): Readable {
      return createReadStream(pathOf(key), range ? { start: range.start, end: range.end } : {});
    },

    async exists(key) {
      try {
        return (await lstat(pathOf(key))).isFile();
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
        throw error;
      }
    },

    async delete(key) {
      try {
        await unlink(pathOf(key));
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      }
    },

    async localPath(key) {
      const path = pathOf(key);
      await lstat(path);
      return path;
    },

    async *list(options: ListOptions = {}): AsyncIterable<StoredObject> {
      for await (const { path, name, key } of walk(root, options.after)) {
        const temporary = name.startsWith(TEMPORARY_PREFIX);
        if (temporary && !options.temporaries) continue;
        let stats: import('node:fs').Stats;
        try {
          stats = await lstat(path);
        } catch {
          continue;
        }
        if (!stats.isFile()) continue;
        yield {
          key,
          size: stats.size,
          modifiedAt: stats.mtime,
          ...(temporary ? { temporary } : {}),
        };
      }
    },

    async sweepStaleTemporaries(maxAgeMs = STALE_TEMPORARY_AGE_MS, now = new Date()) {
      let removed = 0;
      for await (const { path, name } of walk(root)) {
        if (!name.startsWith(TEMPORARY_PREFIX)) continue;
        let stats: import('node:fs').Stats;
        try {
          stats = await lstat(path);
        } catch {
          continue;
        }
        // Only regular files: a link with our prefix is not ours to follow or remove.
        if (!stats.isFile() || now.getTime() - stats.mtimeMs <= maxAgeMs) continue;
        try {
          await unlink(path);
          removed++;
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
        }
      }
      return { removed };
    },
  };
}
