import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, openSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import {
  configFiles,
  LOCAL_SECRET_KEY_FILE,
  parseConfig,
  requireSecretKeys,
  withSettingsFile,
} from '../core/config';
import { ensureDatabase, migrate } from '../db/migrate';
import { ensureDevWorkspace } from './lib/devWorkspace';
import { type MailSink, startMailSink } from './lib/mailSink';
import { ensurePostgres } from './lib/postgres';
import {
  type DevServer,
  findOrBuildTemporal,
  startDevServer,
  waitForTemporal,
} from './lib/temporal';
import { ensureWebBuild } from './lib/webBuild';
import { workerArgs } from './lib/workerBuild';

/**
 * `npm start`: the whole stack on embedded defaults. PostgreSQL (local, started if down),
 * the Temporal dev server (SQLite file under .data/, UI on :8233), the worker, the web
 * console on :3000, and a development workspace whose API key is printed. Ctrl-C stops
 * everything this started. The console runs its production build (D6: `next build`, done
 * again only when its sources changed, then `next start`); `npm run dev` (`--hot`) runs
 * `next dev` with hot reload instead.
 */
const hot = process.argv.includes('--hot');
const DATA = resolve('.data');
mkdirSync(DATA, { recursive: true });
const log = (line: string) => process.stdout.write(`quire: ${line}\n`);

/**
 * D1: outside production, with no key configured, the stack's key is generated once and kept
 * in LOCAL_SECRET_KEY_FILE; every other process of this checkout (`npm run worker`, the admin
 * commands) reads it from there, so they all seal and open with the same key.
 */
/**
 * D9: the settings file (QUIRE_ENV_FILE, default .env) under this command's environment; the
 * processes started below get all of it.
 */
const settings = withSettingsFile(process.env, configFiles);

function localSecretKeys(): Record<string, string> {
  const configured =
    settings.QUIRE_SECRET_KEY || settings.QUIRE_SECRET_KEYS || settings.QUIRE_SECRET_KEY_FILE;
  if (configured || settings.NODE_ENV === 'production') return {};
  const file = resolve(LOCAL_SECRET_KEY_FILE);
  if (!existsSync(file)) {
    writeFileSync(file, `${randomBytes(32).toString('hex')}\n`, { mode: 0o600, flag: 'wx' });
    log(
      `generated this stack's secret key in ${LOCAL_SECRET_KEY_FILE} (keep it: it opens sealed webhook secrets)`,
    );
  }
  return { QUIRE_SECRET_KEY_FILE: file };
}

const webPort = Number(settings.PORT ?? 3000);

let mailSink: MailSink | undefined;
const env: NodeJS.ProcessEnv = {
  ...process.env,
  ...settings,
  ...localSecretKeys(),
  TEMPORAL_ADDRESS: settings.TEMPORAL_ADDRESS ?? '127.0.0.1:7233',
  QUIRE_TEMPORAL_UI_URL: settings.QUIRE_TEMPORAL_UI_URL ?? 'http://localhost:8233',
  QUIRE_PUBLIC_URL: settings.QUIRE_PUBLIC_URL ?? `http://localhost:${webPort}`,
  QUIRE_HEALTH_FILE: settings.QUIRE_HEALTH_FILE ?? join(DATA, 'worker-health.json'),
  QUIRE_BLOB_DIR: settings.QUIRE_BLOB_DIR ?? join(DATA, 'blobs'),
};
const config = parseConfig(env, { files: configFiles });
requireSecretKeys(config);

const children: ChildProcess[] = [];
let temporal: DevServer | undefined;
let stopping = false;

async function stopAll(code: number): Promise<never> {
  if (!stopping) {
    stopping = true;
    log('stopping...');
    // The sink runs in a process group of its own, so no signal to ours reaches it: first.
    const sinkStopped = mailSink?.stop();
    for (const child of children) if (child.exitCode === null) child.kill('SIGTERM');
    await Promise.all(
      children.map(
        (child) =>
          new Promise((done) => {
            if (child.exitCode !== null) return done(undefined);
            const timer = setTimeout(
              () => child.kill('SIGKILL'),
              config.QUIRE_SHUTDOWN_GRACE_MS + 5_000,
            );
            child.once('exit', () => {
              clearTimeout(timer);
              done(undefined);
            });
          }),
      ),
    );
    await temporal?.stop();
    await sinkStopped;
  }
  process.exit(code);
}
process.on('SIGINT', () => void stopAll(0));
process.on('SIGTERM', () => void stopAll(0));

function start(name: string, args: string[]): ChildProcess {
  const out = openSync(join(DATA, `${name}.log`), 'a');
  const child = spawn(process.execPath, args, { env, stdio: ['ignore', out, out] });
  child.once('exit', (code, signal) => {
    if (!stopping) {
      log(`${name} exited (${signal ?? code}); see .data/${name}.log`);
      void stopAll(1);
    }
  });
  children.push(child);
  return child;
}

async function waitReady(url: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    try {
      const response = await fetch(url);
      if (response.status === 200) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new Error(`${url} did not answer 200 within ${timeoutMs / 1000} s`);
}

const began = Date.now();
await ensurePostgres(config.DATABASE_URL, log);
await ensureDatabase(config.DATABASE_URL);
await migrate(config.DATABASE_URL);

try {
  await waitForTemporal(config.TEMPORAL_ADDRESS, 1_500);
  log(`using the Temporal server already at ${config.TEMPORAL_ADDRESS}`);
} catch {
  const binary = findOrBuildTemporal(log);
  const port = Number(config.TEMPORAL_ADDRESS.split(':').at(-1));
  log(`starting the Temporal dev server on :${port} (UI :8233, history in .data/temporal.db)...`);
  temporal = await startDevServer(binary, {
    port,
    uiPort: 8233,
    dbFile: join(DATA, 'temporal.db'),
    logFile: join(DATA, 'temporal.log'),
  });
}

/**
 * R9: with no mail server configured, the stack runs its own SMTP sink (Mailpit, on the ports
 * it is known by: SMTP :1025, mailbox :8025; QUIRE_DEV_SMTP_PORT and QUIRE_DEV_MAIL_PORT move
 * them) and the console sends there; its mailbox shows every message (invitations, reset
 * links, notices), and the console links to it (QUIRE_DEV_MAIL_URL).
 */
if (!config.QUIRE_SMTP_URL) {
  const httpPort = Number(settings.QUIRE_DEV_MAIL_PORT ?? 8025);
  log(`starting the mail sink (Mailpit, mailbox on :${httpPort})...`);
  mailSink = await startMailSink({
    smtpPort: Number(settings.QUIRE_DEV_SMTP_PORT ?? 1025),
    httpPort,
    dir: DATA,
    log,
  });
  env.QUIRE_SMTP_URL = mailSink.smtpUrl;
  env.QUIRE_DEV_MAIL_URL = mailSink.httpUrl.replace('127.0.0.1', 'localhost');
}

const workspace = await ensureDevWorkspace(config.DATABASE_URL, join(DATA, 'dev-workspace.json'));

if (!hot) {
  const { built } = await ensureWebBuild(resolve('.'), '.next', log, join(DATA, 'next-build.log'));
  if (!built) log('the console build in web/.next is current');
}
// P6: compiled at each start (well under a second), so it always runs today's sources.
start('worker', workerArgs(resolve('.')));
start('web', [
  'node_modules/next/dist/bin/next',
  hot ? 'dev' : 'start',
  'web',
  '-p',
  String(webPort),
  '-H',
  '127.0.0.1',
]);
log('waiting for the console to be ready...');
await waitReady(`http://127.0.0.1:${webPort}/readyz`, 180_000);

process.stdout.write(
  [
    '',
    `  Quire is running (ready in ${Math.round((Date.now() - began) / 1000)} s)`,
    `  console       http://localhost:${webPort}`,
    `  Temporal UI   ${config.QUIRE_TEMPORAL_UI_URL}`,
    `  mail          ${env.QUIRE_DEV_MAIL_URL ?? 'through QUIRE_SMTP_URL'}`,
    `  workspace     ${workspace.workspaceId}`,
    `  sign in       ${workspace.owner.email} / ${workspace.owner.password} (owner)`,
    `  operator      ${workspace.operator.email} / ${workspace.operator.password}`,
    `  API key       ${workspace.apiKey}`,
    `  try           curl -H "Authorization: Bearer ${workspace.apiKey}" http://localhost:${webPort}/api/v1/workspaces/${workspace.workspaceId}`,
    '  logs          .data/worker.log, .data/web.log, .data/temporal.log, .data/mailpit.log',
    '  Ctrl-C stops everything.',
    '',
  ].join('\n'),
);
