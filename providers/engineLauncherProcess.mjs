// The engine launcher (P6): a small process of the worker's that starts the engine's
// processes for it. Plain JavaScript, so it runs with nothing but `node`, from the sources
// and from the compiled worker alike.
//
// Why it exists: `spawn` forks the calling process before the child runs `exec`. Forking the
// worker (its V8 heaps, the SDK's core, the image libraries: hundreds of megabytes mapped)
// copies its page tables and marks every page it has written copy-on-write, so after each
// page's engine started, the worker took a page fault on the first write to every page it
// touched again. Forking this process instead costs a small process a small fault set; the
// worker only sends a message.
//
// Protocol, over the IPC channel, JSON:
//   worker -> launcher  { id, program, args, env, input }   start `program`; `input` is a
//                                                          file given to it as stdin
//                       { kill: id }                        SIGKILL that call's process
//   launcher -> worker  { id, code, signal, stdout, stderr }   the process closed
//                       { id, error, failed }               `input` could not be opened or
//                                                          `program` started (`error`: errno code)
// Nothing here logs: the arguments, the input and the output are the worker's business.
import { spawn } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { setPriority } from 'node:os';

/** stderr is kept only for the classification of a failure: its head is enough. */
const STDERR_LIMIT = 10_000;
const running = new Map();

process.on('message', (message) => {
  if (message && typeof message.kill === 'number') {
    running.get(message.kill)?.kill('SIGKILL');
    return;
  }
  start(message);
});

// The worker is gone (it exited, was killed, or closed its engine): so are the pages it was
// reading. Nothing may run on as an orphan holding a core, and this process exits only once
// what it started has.
process.on('disconnect', async () => {
  const children = [...running.values()];
  const exits = children.map(
    (child) =>
      new Promise((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) resolve();
        else child.once('exit', resolve);
      }),
  );
  for (const child of children) child.kill('SIGKILL');
  await Promise.all(exits);
  process.exit(0);
});

/** A reply, unless the worker has gone (its calls end with it). */
function reply(message) {
  if (process.connected) process.send(message);
}

function start({ id, program, args, env, input, nice }) {
  let fd;
  try {
    fd = openSync(input, 'r');
  } catch (error) {
    reply({ id, error: error.code ?? 'EIO', failed: 'input' });
    return;
  }
  let child;
  try {
    // The image goes in as the process's stdin, read from the file by the engine itself: no
    // copy of it passes through this process or the worker.
    child = spawn(program, args, { stdio: [fd, 'pipe', 'pipe'], env });
  } catch (error) {
    reply({ id, error: error.code ?? 'EINVAL', failed: 'program' });
    return;
  } finally {
    // The child holds its own descriptor from here on (or never started).
    closeSync(fd);
  }
  // P8: bulk work yields the CPU to interactive work. Set before the engine has done any
  // work worth the name (it is still loading its model); a failure leaves it at 0.
  if (nice > 0 && child.pid !== undefined) {
    try {
      setPriority(child.pid, Math.min(19, nice));
    } catch {
      // Not permitted here: the process runs at the launcher's priority.
    }
  }
  running.set(id, child);
  const stdout = [];
  let stderr = '';
  let failed = false;
  child.stdout.on('data', (chunk) => stdout.push(chunk));
  child.stderr.on('data', (chunk) => {
    if (stderr.length < STDERR_LIMIT) stderr += chunk.toString('utf8');
  });
  child.on('error', (error) => {
    if (failed) return;
    failed = true;
    running.delete(id);
    reply({ id, error: error.code ?? 'EIO', failed: 'program' });
  });
  child.on('close', (code, signal) => {
    if (failed) return;
    running.delete(id);
    reply({ id, code, signal, stdout: Buffer.concat(stdout).toString('utf8'), stderr });
  });
}
