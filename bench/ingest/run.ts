import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { ensureDatabase, migrate } from '../../db/migrate';
import { jpeg, wav } from '../../test/support/uploadFixtures';
import { ADMIN_URL, databaseUrl } from '../lib/benchDatabase';
import { postParts, serverStats, startIngestServer, stopIngestServer } from '../lib/uploadClient';

/**
 * Ingest benchmark (issue 6): MB/s and files/s for 200 images and 20 audio files through the
 * HTTP API, and the server's peak RSS during one 500 MB upload (memory should stay flat).
 * Prints one JSON object. Env: QUIRE_BENCH_ADMIN_URL (default local Postgres, trust).
 */
const MB = 1024 * 1024;

function* padded(head: Buffer, size: number): Iterable<Buffer> {
  yield head;
  const block = randomBytes(256 * 1024);
  for (let sent = head.length; sent < size; sent += block.length) {
    yield block.subarray(0, Math.min(block.length, size - sent));
  }
}

/** A scan-sized JPEG: real header (A4 at 300 dpi), incompressible body. */
const imageFile = (i: number, size: number) => {
  const head = jpeg(2480, 3508).subarray(0, -2);
  return { name: `scan-${i}.jpg`, size, chunks: () => padded(head, size) };
};

/** A mono 16-bit 48 kHz WAV of `size` bytes. */
const audioFile = (i: number, size: number) => {
  const head = wav(0, 48_000);
  head.writeUInt32LE(size - 8, 4);
  head.writeUInt32LE(size - 44, 40);
  return { name: `session-${i}.wav`, size, chunks: () => padded(head, size) };
};

async function main() {
  const name = `quire_bench_${randomBytes(4).toString('hex')}`;
  const url = databaseUrl(name);
  await ensureDatabase(url);
  await migrate(url);
  const blobDir = await mkdtemp(join(tmpdir(), 'quire-bench-'));
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const ws = (await client.query(`INSERT INTO workspaces (name) VALUES ('bench') RETURNING id`))
    .rows[0].id;
  let server: ChildProcess | undefined;
  try {
    let port: number;
    ({ server, port } = await startIngestServer({
      DATABASE_URL: url,
      QUIRE_BLOB_DIR: blobDir,
      NODE_OPTIONS: '--expose-gc',
    }));
    const path = `/ws/${ws}/batches`;

    // 200 images of 1 MiB, 20 per request, two requests in flight.
    const imageSize = MB;
    let start = performance.now();
    const requests = Array.from({ length: 10 }, (_, r) =>
      Array.from({ length: 20 }, (_, i) => imageFile(r * 20 + i, imageSize)),
    );
    for (let r = 0; r < requests.length; r += 2) {
      const results = await Promise.all(
        requests.slice(r, r + 2).map((files) => postParts(port, path, files)),
      );
      for (const res of results)
        if (res.status !== 201) throw new Error(`image ingest failed: ${res.body}`);
    }
    const imageSeconds = (performance.now() - start) / 1000;

    // 20 recordings of 10 MiB, one per request, two in flight.
    const audioSize = 10 * MB;
    start = performance.now();
    for (let i = 0; i < 20; i += 2) {
      const results = await Promise.all(
        [i, i + 1].map((n) => postParts(port, path, [audioFile(n, audioSize)])),
      );
      for (const res of results)
        if (res.status !== 201) throw new Error(`audio ingest failed: ${res.body}`);
    }
    const audioSeconds = (performance.now() - start) / 1000;

    // One 500 MB upload: the server's RSS is sampled every 20 ms.
    const before = await serverStats(port, '/reset', 'POST');
    start = performance.now();
    const big = await postParts(port, path, [audioFile(999, 500 * MB)]);
    if (big.status !== 201) throw new Error(`large ingest failed: ${big.body}`);
    const bigSeconds = (performance.now() - start) / 1000;
    const after = await serverStats(port);

    const round = (n: number) => Math.round(n * 100) / 100;
    console.log(
      JSON.stringify({
        benchmark: 'ingest',
        images: {
          files: 200,
          bytes: 200 * imageSize,
          seconds: round(imageSeconds),
          mbPerSecond: round((200 * imageSize) / MB / imageSeconds),
          filesPerSecond: round(200 / imageSeconds),
        },
        audio: {
          files: 20,
          bytes: 20 * audioSize,
          seconds: round(audioSeconds),
          mbPerSecond: round((20 * audioSize) / MB / audioSeconds),
          filesPerSecond: round(20 / audioSeconds),
        },
        largeUpload: {
          bytes: 500 * MB,
          seconds: round(bigSeconds),
          mbPerSecond: round(500 / bigSeconds),
          rssBeforeMb: round(before.rss / MB),
          peakRssDuringMb: round(after.peakRss / MB),
          growthMb: round((after.peakRss - before.rss) / MB),
          processPeakRssMb: after.vmHwm === null ? null : round(after.vmHwm / MB),
        },
      }),
    );
  } finally {
    stopIngestServer(server);
    await client.end();
    await rm(blobDir, { recursive: true, force: true });
    const admin = new pg.Client({ connectionString: ADMIN_URL });
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.end();
  }
}

await main();
