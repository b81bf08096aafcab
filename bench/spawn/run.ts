/**
 * bench/spawn (P6): what starting one engine process costs the process that asks for it, with
 * `spawn` from that process (as the worker did) against a message to the engine launcher
 * (`providers/engineLauncher.ts`, as the worker does now). Between two starts this process
 * writes `BENCH_WRITE_MB` of memory it already holds, as a worker does between two pages (its
 * V8 young generation, the SDK's buffers): after a fork every page it writes again faults
 * once, so the cost of a start is mostly what comes after it, and grows with what the process
 * writes. The program started is `/bin/true`, so the figures are the start alone.
 *
 * Also prints what a minor page fault costs on this machine (a fresh anonymous page, first
 * touch): on virtual machines where a fault traps to the hypervisor it is tens of times a
 * bare machine's, and every figure here scales with it.
 * Env: BENCH_STARTS (100 per run), BENCH_RUNS (3), BENCH_WRITE_MB (32), BENCH_HELD_MB (200).
 */
import { spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { EngineLauncher } from '../../providers/engineLauncher';
import { REPO_ROOT } from '../../test/support/fixtures';
import { cpuOf } from '../lib/cpu';
import { median, round } from '../lib/stack';

const STARTS = Math.max(10, Number(process.env.BENCH_STARTS ?? 100));
const RUNS = Math.max(1, Number(process.env.BENCH_RUNS ?? 3));
const WRITE_MB = Math.max(0, Number(process.env.BENCH_WRITE_MB ?? 32));
const HELD_MB = Math.max(WRITE_MB, Number(process.env.BENCH_HELD_MB ?? 200));
const PAGE = 4096;

/** Memory this process holds, as a worker holds its heaps; the first WRITE_MB are rewritten. */
const held = Array.from({ length: HELD_MB }, () => Buffer.alloc(1 << 20, 1));

function writeBetweenStarts(): void {
  for (let mb = 0; mb < WRITE_MB; mb++) {
    const buffer = held[mb]!;
    for (let at = 0; at < buffer.length; at += PAGE) buffer[at]! ^= 1;
  }
}

/** CPU microseconds of this process so far. */
function ownCpu(): number {
  const { user, system } = process.cpuUsage();
  return user + system;
}

function direct(): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn('/bin/true', [], { stdio: ['ignore', 'pipe', 'pipe'] });
    child.on('error', reject);
    child.on('close', () => resolve());
  });
}

const launcher = new EngineLauncher();
const signal = new AbortController().signal;
const throughLauncher = () =>
  launcher.run({ program: '/bin/true', args: [], env: {}, input: '/dev/null', signal });

/** CPU microseconds per start, this process's and the launcher's, the writes' own cost apart. */
async function measure(start: () => Promise<unknown>, writesCost: number) {
  await start();
  const launcherBefore = launcher.pid ? cpuOf(launcher.pid).self : 0;
  const before = ownCpu();
  for (let i = 0; i < STARTS; i++) {
    await start();
    writeBetweenStarts();
  }
  const caller = (ownCpu() - before) / STARTS - writesCost;
  const helper = launcher.pid ? ((cpuOf(launcher.pid).self - launcherBefore) * 1e6) / STARTS : 0;
  return { caller, helper };
}

/** What the writes cost with no start between them (the pages already writable). */
function writesAlone(): number {
  writeBetweenStarts();
  const before = ownCpu();
  for (let i = 0; i < STARTS; i++) writeBetweenStarts();
  return (ownCpu() - before) / STARTS;
}

/** Microseconds a first touch of a fresh page costs. */
function faultCost(): number {
  const size = 64 << 20;
  const before = ownCpu();
  const fresh = Buffer.allocUnsafeSlow(size);
  for (let at = 0; at < size; at += PAGE) fresh[at] = 1;
  return (ownCpu() - before) / (size / PAGE);
}

const runs: Array<{
  faultMicroseconds: number;
  writesMicroseconds: number;
  spawn: { caller: number; helper: number };
  launcher: { caller: number; helper: number };
}> = [];
for (let run = 0; run < RUNS; run++) {
  const writes = writesAlone();
  // Alternating, so a change of the machine's speed falls on both.
  const fromCaller = await measure(direct, writes);
  const fromLauncher = await measure(throughLauncher, writes);
  runs.push({
    faultMicroseconds: faultCost(),
    writesMicroseconds: writes,
    spawn: fromCaller,
    launcher: fromLauncher,
  });
}
await launcher.close();

const ms = (values: number[]) => round(median(values) / 1000, 3);
const report = {
  bench: 'spawn',
  machine: { cores: os.availableParallelism(), loadAverage: os.loadavg() },
  startsPerRun: STARTS,
  runs: RUNS,
  heldMegabytes: HELD_MB,
  writtenMegabytesBetweenStarts: WRITE_MB,
  minorFaultMicrosecondsMedian: round(median(runs.map((r) => r.faultMicroseconds)), 2),
  writesAloneMillisecondsMedian: ms(runs.map((r) => r.writesMicroseconds)),
  perStartMillisecondsMedian: {
    spawnFromCaller: ms(runs.map((r) => r.spawn.caller)),
    throughLauncher: {
      caller: ms(runs.map((r) => r.launcher.caller)),
      launcher: ms(runs.map((r) => r.launcher.helper)),
      both: ms(runs.map((r) => r.launcher.caller + r.launcher.helper)),
    },
  },
};
const out = JSON.stringify(report, null, 2);
console.log(out);
await writeFile(path.join(REPO_ROOT, 'bench/spawn/last-run.json'), `${out}\n`);
