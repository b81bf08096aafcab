import 'server-only';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';

/**
 * F7: Mirador as the project installed it from npm (`mirador` in package.json), never from a
 * CDN: its self-contained browser build, `dist/mirador.min.js` (React, MUI and OpenSeadragon
 * inside), served to the console's viewer page by `/console-api/viewer/mirador.js`.
 *
 * The file is found by walking up from the working directory to the `node_modules` that holds
 * it (the console runs from the repository root, from `web/`, or from the image's `/app`),
 * not through `require.resolve`, which the console's bundler would rewrite at build time.
 */

export const MIRADOR_DIST = join('node_modules', 'mirador', 'dist', 'mirador.min.js');

export interface MiradorBundle {
  bytes: Buffer;
  etag: string;
}

let bundle: Promise<MiradorBundle> | undefined;

function locate(): string {
  let dir = process.cwd();
  for (;;) {
    const candidate = join(dir, MIRADOR_DIST);
    if (existsSync(candidate)) return candidate;
    const up = dirname(dir);
    if (up === dir) throw new Error(`the Mirador bundle (${MIRADOR_DIST}) is not installed`);
    dir = up;
  }
}

/** The bundle's bytes, read once per process, with an entity tag of its content. */
export function miradorBundle(): Promise<MiradorBundle> {
  bundle ??= readFile(locate()).then((bytes) => ({
    bytes,
    etag: `"${createHash('sha256').update(bytes).digest('base64url').slice(0, 27)}"`,
  }));
  bundle.catch(() => {
    bundle = undefined;
  });
  return bundle;
}
