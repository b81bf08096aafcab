import { execFile, spawn } from 'node:child_process';
import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { engineWorkAhead } from '../../activities/maintenance';
import { ProviderError } from '../../core/failures';
import type { CallContext } from '../../core/provider';
import { characterErrors, corpusErrorRate } from '../../core/textMetrics';
import { BULK_NICENESS } from '../../providers/engineLauncher';
import { bundledLanguageDir, TesseractProvider } from '../../providers/tesseract';
import {
  createTesseractEngine,
  NativeTesseractProvider,
  parseTsvLines,
} from '../../providers/tesseractNative';
import {
  frakturLines,
  MANIFESTO_PAGE,
  makeTempDir,
  PAGE_LINES,
  REPO_ROOT,
  removeDir,
  renderPage,
} from '../support/fixtures';

/**
 * P3: the native engine is Debian's `tesseract` binary with the bundled best_int English
 * model; it reads a page in one pass as the bare CLI does, and refuses cleanly without the
 * binary. P2: its slots (and tesseract.js' workers) run pages side by side.
 */
const run = promisify(execFile);
const FRAKTUR_DATA = '/usr/share/tesseract-ocr/5/tessdata';
let dir: string;
let modelDir: string;

function ctx(language = 'en'): CallContext {
  return { signal: new AbortController().signal, language, options: {}, callKey: 'native' };
}

beforeAll(async () => {
  dir = await makeTempDir('quire-native-');
  // The bare CLI gets the same model data as the provider: the npm package's, decompressed.
  modelDir = path.join(dir, 'model');
  await mkdir(modelDir);
  const packed = await readFile(path.join(bundledLanguageDir(), 'eng.traineddata.gz'));
  await writeFile(path.join(modelDir, 'eng.traineddata'), gunzipSync(packed));
});

afterAll(async () => {
  await removeDir(dir);
});

/** The path of the machine's tesseract binary. */
async function realTesseract(): Promise<string> {
  return (await run('sh', ['-c', 'command -v tesseract'])).stdout.trim();
}

/** A `tesseract` shell script in `at` (created if missing) that runs `script`. */
async function placeTesseract(at: string, script: string): Promise<void> {
  await mkdir(at, { recursive: true });
  await writeFile(path.join(at, 'tesseract'), `#!/bin/sh\n${script}\n`, { mode: 0o755 });
}

/** What the bare CLI prints for the page, line by line, blank lines dropped. */
async function bareCliLines(image: string): Promise<string[]> {
  const { stdout } = await run(
    'tesseract',
    [image, 'stdout', '--tessdata-dir', modelDir, '-l', 'eng', '--oem', '1', '--psm', '3'],
    { env: { OMP_THREAD_LIMIT: '1' } as unknown as NodeJS.ProcessEnv, maxBuffer: 10_000_000 },
  );
  return stdout
    .split('\n')
    .map((l) => l.replace(/\s+/g, ' ').trim())
    .filter((l) => l !== '');
}

describe('native tesseract (P3)', () => {
  it('P3 reads the title, byline and first paragraph of the real scan as the bare CLI reads them', async () => {
    const provider = new NativeTesseractProvider({ dataCacheDir: path.join(dir, 'cache') });
    try {
      const [reading, bare] = await Promise.all([
        provider.readPage({ path: MANIFESTO_PAGE, mediaType: 'image/png' }, ctx()),
        bareCliLines(MANIFESTO_PAGE),
      ]);
      const texts = reading.lines.map((l) => l.text);
      // Title (3 lines), a stray mark, byline, then the first paragraph (5 lines).
      const firstParagraph = bare.findIndex((l) => l.startsWith('A SPECTRE'));
      expect(firstParagraph).toBeGreaterThan(2);
      const head = bare.slice(0, firstParagraph + 5);
      expect(texts.slice(0, head.length)).toEqual(head);
      expect(head.slice(0, 3)).toEqual(['MANIFESTO', 'OF THE', 'COMMUNIST PARTY']);
      expect(head.join('\n')).toMatch(/KARL MARX .* FREDERICK ENGELS/);
      expect(head.at(-1)).toMatch(/police-spies\.$/);
      // The whole page agrees with the bare CLI, line for line.
      expect(texts).toEqual(bare);
      for (const line of reading.lines) {
        expect(line.box.w).toBeGreaterThan(0);
        expect(line.confidence).toBeGreaterThan(0);
        expect(line.confidence).toBeLessThanOrEqual(1);
      }
      expect(provider.identity()).toMatchObject({
        engine: 'tesseract',
        model: 'tessdata-4.0.0_best_int',
      });
      expect(provider.identity().version).toMatch(/^\d+\.\d+/);
    } finally {
      await provider.close();
    }
  });

  it('P3 refuses cleanly when the binary is missing; auto falls back to tesseract.js', async () => {
    const missing = new NativeTesseractProvider({ searchPath: path.join(dir, 'no-bin') });
    const attempt = missing.readPage({ path: MANIFESTO_PAGE, mediaType: 'image/png' }, ctx());
    await expect(attempt).rejects.toBeInstanceOf(ProviderError);
    await expect(attempt).rejects.toMatchObject({
      category: 'outage',
      message: expect.stringMatching(/apt-get install tesseract-ocr/),
    });
    expect(missing.poolStats()).toMatchObject({ busy: 0, waiting: 0, peakBusy: 0 });
    expect(
      createTesseractEngine({ engine: 'auto', threads: 1, searchPath: path.join(dir, 'no-bin') }),
    ).toBeInstanceOf(TesseractProvider);
    expect(createTesseractEngine({ engine: 'auto', threads: 1 })).toBeInstanceOf(
      NativeTesseractProvider,
    );
    expect(createTesseractEngine({ engine: 'js', threads: 1 })).toBeInstanceOf(TesseractProvider);
  });

  it('P6 finds the binary once, not for every page; one moved away is looked for again', async () => {
    const real = await realTesseract();
    const [first, second, third] = ['bin-a', 'bin-b', 'bin-c'].map((d) => path.join(dir, d));
    const provider = new NativeTesseractProvider({
      searchPath: [first, second, third].join(path.delimiter),
      dataCacheDir: path.join(dir, 'cache'),
    });
    const page = { path: MANIFESTO_PAGE, mediaType: 'image/png' };
    try {
      await placeTesseract(second!, `exec ${real} "$@"`);
      expect((await provider.readPage(page, ctx())).lines.length).toBeGreaterThan(5);
      // A lookup for this page would find the broken one first on the path: none is made.
      await placeTesseract(first!, 'exit 3');
      expect((await provider.readPage(page, ctx())).lines.length).toBeGreaterThan(5);
      // The binary found is gone: the page looks again, and finds where it went.
      await rm(path.join(first!, 'tesseract'));
      await rm(path.join(second!, 'tesseract'));
      await placeTesseract(third!, `exec ${real} "$@"`);
      expect((await provider.readPage(page, ctx())).lines.length).toBeGreaterThan(5);
      // Gone everywhere: the engine is missing, as at a start without it.
      await rm(path.join(third!, 'tesseract'));
      await expect(provider.readPage(page, ctx())).rejects.toMatchObject({ category: 'outage' });
    } finally {
      await provider.close();
    }
  });

  it("P6 reads the binary's version while the first page is read, not when the page's identity is asked for", async () => {
    const real = await realTesseract();
    const bin = path.join(dir, 'bin-logged');
    const calls = path.join(dir, 'calls.log');
    await placeTesseract(bin, `echo "$1" >> ${calls}\nexec ${real} "$@"`);
    const provider = new NativeTesseractProvider({
      searchPath: bin,
      dataCacheDir: path.join(dir, 'cache'),
    });
    try {
      await provider.readPage({ path: MANIFESTO_PAGE, mediaType: 'image/png' }, ctx());
      expect((await readFile(calls, 'utf8')).split('\n')).toContain('--version');
      const { stdout: version } = await run(real, ['--version']);
      expect(version).toContain(provider.identity().version);
      expect(provider.identity().version).toMatch(/^\d+\.\d+/);
    } finally {
      await provider.close();
    }
  });

  it('P3 Q3 an unreadable image fails image, a missing language invalid, a missing file internal', async () => {
    const provider = new NativeTesseractProvider({ dataCacheDir: path.join(dir, 'cache') });
    const junk = path.join(dir, 'junk.png');
    await writeFile(junk, 'not an image at all');
    await expect(
      provider.readPage({ path: junk, mediaType: 'image/png' }, ctx()),
    ).rejects.toMatchObject({ category: 'image' });
    await expect(
      provider.readPage({ path: MANIFESTO_PAGE, mediaType: 'image/png' }, ctx('deu')),
    ).rejects.toMatchObject({ category: 'invalid' });
    await expect(
      provider.readPage({ path: path.join(dir, 'gone.png'), mediaType: 'image/png' }, ctx()),
    ).rejects.toMatchObject({ category: 'internal' });
  });

  it('P3 reads Fraktur with the frk model from QUIRE_TESSDATA_DIR (Debian tesseract-ocr-frk)', async () => {
    const provider = new NativeTesseractProvider({ tessdataDir: FRAKTUR_DATA });
    try {
      const counts = [];
      for (const line of await frakturLines()) {
        const { lines } = await provider.readPage(
          { path: line.image, mediaType: 'image/tiff' },
          ctx('frk'),
        );
        counts.push(characterErrors(line.text, lines.map((l) => l.text).join(' ')));
      }
      const cer = corpusErrorRate(counts);
      console.info(JSON.stringify({ test: 'native-fraktur-frk', lines: counts.length, cer }));
      expect(counts).toHaveLength(20);
      expect(cer).toBeLessThan(0.12);
    } finally {
      await provider.close();
    }
  });

  it('P3 TSV lines: words joined, blank lines dropped, confidence the mean of the words', () => {
    const tsv = [
      'level\tpage_num\tblock_num\tpar_num\tline_num\tword_num\tleft\ttop\twidth\theight\tconf\ttext',
      '4\t1\t1\t1\t1\t0\t10\t20\t300\t40\t-1\t',
      '5\t1\t1\t1\t1\t1\t10\t20\t100\t40\t90\tOld',
      '5\t1\t1\t1\t1\t2\t120\t20\t190\t40\t70\tletters',
      '4\t1\t1\t1\t2\t0\t10\t70\t300\t5\t-1\t',
      '5\t1\t1\t1\t2\t1\t10\t70\t300\t5\t95\t ',
    ].join('\n');
    expect(parseTsvLines(tsv)).toEqual([
      { box: { x: 10, y: 20, w: 300, h: 40 }, text: 'Old letters', confidence: 0.8 },
    ]);
  });
});

describe('engine slots (P2)', () => {
  it('P2 two pages at once keep two native engine processes busy; one slot runs them in turn', async () => {
    const two = new NativeTesseractProvider({ threads: 2, dataCacheDir: path.join(dir, 'cache') });
    const one = new NativeTesseractProvider({ threads: 1, dataCacheDir: path.join(dir, 'cache') });
    const page = { path: MANIFESTO_PAGE, mediaType: 'image/png' };
    try {
      const busy: number[] = [];
      const sampler = setInterval(() => busy.push(two.poolStats().busy), 20);
      const [a, b] = await Promise.all([two.readPage(page, ctx()), two.readPage(page, ctx())]);
      clearInterval(sampler);
      expect(a.lines.map((l) => l.text)).toEqual(b.lines.map((l) => l.text));
      expect(two.poolStats().peakBusy).toBe(2);
      // Both were busy together for most of the run, not one after the other.
      expect(busy.filter((n) => n === 2).length).toBeGreaterThan(busy.length / 2);

      const waited: number[] = [];
      const sampler1 = setInterval(() => waited.push(one.poolStats().waiting), 20);
      await Promise.all([one.readPage(page, ctx()), one.readPage(page, ctx())]);
      clearInterval(sampler1);
      expect(one.poolStats().peakBusy).toBe(1);
      expect(Math.max(...waited)).toBe(1);
    } finally {
      await Promise.all([two.close(), one.close()]);
    }
  });

  it('P2 tesseract.js runs two pages on two engine workers at once', async () => {
    const image = await renderPage(dir, 'page.png', PAGE_LINES);
    const provider = new TesseractProvider({ threads: 2 });
    try {
      const page = { path: image, mediaType: 'image/png' };
      const [a, b] = await Promise.all([
        provider.readPage(page, ctx()),
        provider.readPage(page, ctx()),
      ]);
      expect(a.lines).toHaveLength(PAGE_LINES.length);
      expect(b.lines.map((l) => l.text)).toEqual(a.lines.map((l) => l.text));
      expect(provider.poolStats().peakBusy).toBe(2);
    } finally {
      await provider.close();
    }
  });

  it('P2 close() ends running engine processes and fails the calls waiting for a slot', async () => {
    const provider = new NativeTesseractProvider({
      threads: 1,
      dataCacheDir: path.join(dir, 'cache'),
    });
    const page = { path: MANIFESTO_PAGE, mediaType: 'image/png' };
    const first = provider.readPage(page, ctx()).catch((e: unknown) => e);
    const second = provider.readPage(page, ctx()).catch((e: unknown) => e);
    await new Promise((r) => setTimeout(r, 300));
    expect(provider.poolStats()).toMatchObject({ busy: 1, waiting: 1 });
    await provider.close();
    expect(await second).toMatchObject({ category: 'internal' });
    expect(await first).toBeInstanceOf(ProviderError);
    expect(provider.poolStats()).toMatchObject({ busy: 0, waiting: 0 });
    expect(await processesWith('tesseract\0stdin', path.join(dir, 'cache'))).toEqual([]);
  });
});

/** Live processes whose command line has every one of `parts`, with their parent's pid. */
async function processesWith(...parts: string[]): Promise<Array<{ pid: number; ppid: number }>> {
  const found = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const cmd = await readFile(`/proc/${entry}/cmdline`, 'utf8').catch(() => '');
    if (cmd === '' || !parts.every((part) => cmd.includes(part))) continue;
    const stat = await readFile(`/proc/${entry}/stat`, 'utf8').catch(() => '');
    if (stat === '') continue;
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    found.push({ pid: Number(entry), ppid });
  }
  return found;
}

/** Whether a process still runs (an exited one, reaped or not, has no command line). */
async function isRunning(pid: number): Promise<boolean> {
  return (await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '')) !== '';
}

/** Waits until the process has exited, for up to `ms`; whether it has. */
async function untilGone(pid: number, ms = 10_000): Promise<boolean> {
  const found = await until(async () => ((await isRunning(pid)) ? [] : [pid]), ms);
  return found.length > 0;
}

/** Waits until `find` returns something, for up to `ms`. */
async function until<T>(find: () => Promise<T[]>, ms = 10_000): Promise<T[]> {
  const deadline = Date.now() + ms;
  for (;;) {
    const found = await find();
    if (found.length > 0 || Date.now() > deadline) return found;
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('the engine launcher (P6)', () => {
  it('P6 the engine processes are started by the launcher, never forked from the worker', async () => {
    const cache = path.join(dir, 'cache-launcher');
    const provider = new NativeTesseractProvider({ threads: 2, dataCacheDir: cache });
    const page = { path: MANIFESTO_PAGE, mediaType: 'image/png' };
    try {
      const reading = Promise.all([provider.readPage(page, ctx()), provider.readPage(page, ctx())]);
      const engines = await until(async () => {
        const found = await processesWith('tesseract\0stdin', cache);
        return found.length === 2 ? found : [];
      });
      expect(engines).toHaveLength(2);
      // One launcher, a child of this process, started both.
      const [launcher, ...others] = new Set(engines.map((e) => e.ppid));
      expect(others).toEqual([]);
      expect(launcher).not.toBe(process.pid);
      const launchers = await processesWith('engineLauncherProcess.mjs');
      expect(launchers.find((l) => l.pid === launcher)?.ppid).toBe(process.pid);
      const [a, b] = await reading;
      // The image reaches the engine as its stdin: the page reads as it did from the worker.
      expect(a.lines.length).toBeGreaterThan(5);
      expect(b.lines.map((l) => l.text)).toEqual(a.lines.map((l) => l.text));
      // The next page goes to the same launcher.
      const next = provider.readPage(page, ctx());
      const [third] = await until(() => processesWith('tesseract\0stdin', cache));
      expect(third?.ppid).toBe(launcher);
      await next;
      await provider.close();
      // close() ends the launcher too.
      expect(await isRunning(launcher!)).toBe(false);
    } finally {
      await provider.close();
    }
  });

  it("P8 a bulk page's engine process runs niced; a page a person waits for runs at the worker's priority", async () => {
    const cache = path.join(dir, 'cache-nice');
    const provider = new NativeTesseractProvider({ threads: 2, dataCacheDir: cache });
    const page = { path: MANIFESTO_PAGE, mediaType: 'image/png' };
    /** The niceness of each running engine process (field 19 of /proc/PID/stat). */
    const niceness = async () =>
      Promise.all(
        (await processesWith('tesseract\0stdin', cache)).map(async ({ pid }) => {
          const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
          return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]);
        }),
      );
    try {
      const bulk = provider.readPage(page, ctx());
      expect(
        await until(async () => (await niceness()).filter((n) => n === BULK_NICENESS)),
      ).toEqual([BULK_NICENESS]);
      await bulk;
      const interactive = provider.readPage(page, { ...ctx(), interactive: true });
      const seen = await until(niceness);
      expect(seen).toEqual([0]);
      expect((await interactive).lines.length).toBeGreaterThan(5);
    } finally {
      await provider.close();
    }
  });

  it("P8 a person's page does not wait for a bulk page's engine slot: its engine runs beside the niced bulk one, and no other bulk page starts until it ends", async () => {
    const cache = path.join(dir, 'cache-room');
    const provider = new NativeTesseractProvider({ threads: 1, dataCacheDir: cache });
    const page = { path: MANIFESTO_PAGE, mediaType: 'image/png' };
    /** The running engine processes: pid and niceness. */
    const engines = async () =>
      (
        await Promise.all(
          (
            await processesWith('tesseract\0stdin', cache)
          ).map(async ({ pid }) => {
            const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
            if (stat === '') return undefined;
            return { pid, nice: Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]) };
          }),
        )
      ).filter((e) => e !== undefined);
    try {
      // Two bulk pages on the one slot: the first reads, the second waits for it.
      const bulk = [provider.readPage(page, ctx()), provider.readPage(page, ctx())];
      const [first] = await until(async () => await engines());
      expect(first?.nice).toBe(BULK_NICENESS);
      const person = provider.readPage(page, { ...ctx(), interactive: true });
      let done = false;
      const personDone = person.finally(() => {
        done = true;
      });
      // While the person's engine runs, only that first bulk engine runs beside it.
      const besidePerson = new Set<number>();
      let seenTogether = false;
      while (!done) {
        const now = await engines();
        if (now.some((e) => e.nice === 0)) {
          for (const e of now) if (e.nice === BULK_NICENESS) besidePerson.add(e.pid);
          if (now.some((e) => e.pid === first?.pid)) seenTogether = true;
        }
        await new Promise((r) => setTimeout(r, 20));
      }
      expect(seenTogether).toBe(true);
      expect([...besidePerson]).toEqual([first?.pid]);
      expect((await personDone).lines.length).toBeGreaterThan(5);
      await Promise.all(bulk);
      expect(provider.poolStats().peakBusy).toBe(2);
    } finally {
      await provider.close();
    }
  });

  it("D13 P8 image derivatives make way for a person's page reading on an engine slot of its own, not for a bulk page alone", async () => {
    const provider = new NativeTesseractProvider({
      threads: 1,
      dataCacheDir: path.join(dir, 'cache-ahead'),
    });
    const page = { path: MANIFESTO_PAGE, mediaType: 'image/png' };
    try {
      const bulk = provider.readPage(page, ctx());
      expect(await until(async () => (provider.poolStats().busy === 1 ? [1] : []))).toEqual([1]);
      // One bulk page on the one slot, none waiting: derivatives may run between pages.
      expect(engineWorkAhead([provider])).toBe(0);
      const person = provider.readPage(page, { ...ctx(), interactive: true });
      await until(async () => (provider.poolStats().people === 1 ? [1] : []));
      // The person's call took a slot of its own and waits for nothing, yet derivatives yield.
      expect(provider.poolStats()).toMatchObject({ busy: 2, waiting: 0, people: 1 });
      expect(engineWorkAhead([provider])).toBe(1);
      await Promise.all([bulk, person]);
      expect(engineWorkAhead([provider])).toBe(0);
    } finally {
      await provider.close();
    }
  });

  it('P6 warm() starts the launcher with the worker: the first page goes to the one already running', async () => {
    const cache = path.join(dir, 'cache-warm');
    const provider = new NativeTesseractProvider({ dataCacheDir: cache });
    const ours = async () =>
      (await processesWith('engineLauncherProcess.mjs')).filter((l) => l.ppid === process.pid);
    const before = new Set((await ours()).map((l) => l.pid));
    try {
      provider.warm();
      const started = await until(async () => (await ours()).filter((l) => !before.has(l.pid)));
      expect(started).toHaveLength(1);
      const reading = provider.readPage({ path: MANIFESTO_PAGE, mediaType: 'image/png' }, ctx());
      const [engine] = await until(() => processesWith('tesseract\0stdin', cache));
      expect(engine?.ppid).toBe(started[0]!.pid);
      expect((await reading).lines.length).toBeGreaterThan(5);
    } finally {
      await provider.close();
    }
  });

  it('P3 a page that takes longer than its time-out fails timeout, and its engine process is ended', async () => {
    const bin = path.join(dir, 'bin-slow');
    await placeTesseract(bin, 'exec sleep 30');
    const provider = new NativeTesseractProvider({
      searchPath: bin,
      dataCacheDir: path.join(dir, 'cache'),
      // Long enough for the shell to reach its `sleep` on a busy machine.
      pageTimeoutMs: 1_500,
    });
    try {
      const reading = provider
        .readPage({ path: MANIFESTO_PAGE, mediaType: 'image/png' }, { ...ctx(), interactive: true })
        .catch((e: unknown) => e);
      const [engine] = await until(() => processesWith('sleep\x0030'));
      expect(engine).toBeDefined();
      expect(await reading).toMatchObject({ category: 'timeout' });
      expect(await untilGone(engine!.pid)).toBe(true);
    } finally {
      await provider.close();
    }
  });

  it('P6 a launcher killed during a page: its engine process is ended and the page is read on a new launcher', async () => {
    const cache = path.join(dir, 'cache-killed');
    const provider = new NativeTesseractProvider({ dataCacheDir: cache });
    try {
      const reading = provider.readPage({ path: MANIFESTO_PAGE, mediaType: 'image/png' }, ctx());
      const [engine] = await until(() => processesWith('tesseract\0stdin', cache));
      expect(engine).toBeDefined();
      process.kill(engine!.ppid, 'SIGKILL');
      const read = await reading;
      expect(read.lines.length).toBeGreaterThan(5);
      // The first engine did not read on as an orphan.
      expect(await isRunning(engine!.pid)).toBe(false);
      // The page was read again, by an engine of a new launcher.
      const next = provider.readPage({ path: MANIFESTO_PAGE, mediaType: 'image/png' }, ctx());
      const [again] = await until(() => processesWith('tesseract\0stdin', cache));
      expect(again?.ppid).toBeDefined();
      expect(again!.ppid).not.toBe(engine!.ppid);
      expect(again!.ppid).not.toBe(process.pid);
      await next;
    } finally {
      await provider.close();
    }
  });

  it('P6 a page read and the engine closed: the process exits on its own, the launcher with it', async () => {
    const script = path.join(dir, 'read-and-close.mts');
    await writeFile(
      script,
      [
        `import { NativeTesseractProvider } from ${JSON.stringify(path.join(REPO_ROOT, 'providers/tesseractNative.ts'))};`,
        `const provider = new NativeTesseractProvider({ dataCacheDir: ${JSON.stringify(path.join(dir, 'cache'))} });`,
        `const ctx = { signal: new AbortController().signal, language: 'en', options: {}, callKey: 'k' };`,
        `const read = await provider.readPage({ path: ${JSON.stringify(MANIFESTO_PAGE)}, mediaType: 'image/png' }, ctx);`,
        'await provider.close();',
        "console.log('read', read.lines.length, 'lines, closed');",
      ].join('\n'),
    );
    // Exit 13 would be a top-level await left unsettled: close() waiting on nothing.
    const { stdout } = await run(process.execPath, ['--import', 'tsx', script], { cwd: REPO_ROOT });
    expect(stdout).toMatch(/^read \d+ lines, closed$/m);
  });

  it('P6 a worker killed with -9: its launcher ends the engine processes and exits', async () => {
    const cache = path.join(dir, 'cache-worker-killed');
    const script = path.join(dir, 'reader.mts');
    await writeFile(
      script,
      [
        `import { NativeTesseractProvider } from ${JSON.stringify(path.join(REPO_ROOT, 'providers/tesseractNative.ts'))};`,
        `const provider = new NativeTesseractProvider({ threads: 2, dataCacheDir: ${JSON.stringify(cache)} });`,
        `const ctx = { signal: new AbortController().signal, language: 'en', options: {}, callKey: 'k' };`,
        `const page = { path: ${JSON.stringify(MANIFESTO_PAGE)}, mediaType: 'image/png' };`,
        'await Promise.all([provider.readPage(page, ctx), provider.readPage(page, ctx)]);',
      ].join('\n'),
    );
    const reader = spawn(process.execPath, ['--import', 'tsx', script], {
      cwd: REPO_ROOT,
      stdio: 'ignore',
    });
    try {
      const engines = await until(
        async () => (await processesWith('tesseract\0stdin', cache)).slice(0, 2),
        30_000,
      );
      expect(engines.length).toBeGreaterThan(0);
      const launcher = engines[0]!.ppid;
      reader.kill('SIGKILL');
      expect(await untilGone(launcher)).toBe(true);
      for (const engine of engines) expect(await untilGone(engine.pid)).toBe(true);
    } finally {
      reader.kill('SIGKILL');
    }
  });
});
