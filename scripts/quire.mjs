#!/usr/bin/env node
// Quire's entry point for people and CI. It needs nothing but Node: it installs what the
// project uses (Debian packages, npm packages), then hands over to the TypeScript scripts.
//
//   node scripts/quire.mjs dev      the whole stack on embedded defaults   (npm start; --hot: npm run dev)
//   node scripts/quire.mjs cluster  the production topology on this machine (npm run start:cluster)
//   node scripts/quire.mjs test     every test, starting what they need    (npm test)
//   node scripts/quire.mjs admin …  operator commands (create-workspace, audit)
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
process.chdir(root);

function say(line) {
  process.stderr.write(`quire: ${line}\n`);
}

function run(command, args, options = {}) {
  const result = spawnSync(command, args, { stdio: 'inherit', ...options });
  if (result.error) throw result.error;
  return result.status ?? 1;
}

function has(command) {
  return spawnSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' }).status === 0;
}

function checkNode() {
  const [major, minor] = process.versions.node.split('.').map(Number);
  if (major < 20 || (major === 20 && minor < 9)) {
    say(`Node ${process.versions.node} is too old: Quire needs Node 20.9 or newer.`);
    process.exit(1);
  }
}

/** Debian packages listed in scripts/apt-packages.txt, installed when their command is missing. */
function ensureDebianPackages() {
  const wanted = readFileSync(join(root, 'scripts/apt-packages.txt'), 'utf8')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line && !line.startsWith('#'))
    .map((line) => {
      const [pkg, command] = line.split(/\s+/);
      return { pkg, command };
    });
  const missing = wanted.filter(({ pkg, command }) =>
    command ? !has(command) : spawnSync('dpkg', ['-s', pkg], { stdio: 'ignore' }).status !== 0,
  );
  if (missing.length === 0) return;
  const names = missing.map((m) => m.pkg);
  if (!has('apt-get')) {
    say(`missing system packages (${names.join(', ')}); install them with your package manager.`);
    return;
  }
  // As root apt-get runs as it is; otherwise through sudo.
  const apt = (aptArgs) =>
    process.getuid?.() === 0
      ? run('apt-get', aptArgs, { env })
      : run('sudo', ['apt-get', ...aptArgs], { env });
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  say(`installing Debian packages: ${names.join(' ')}`);
  apt(['update', '-qq']);
  const status = apt(['install', '-y', '-qq', '--no-install-recommends', ...names]);
  if (status !== 0)
    say(`apt-get could not install ${names.join(' ')}; tests that need them will say so.`);
}

/** npm packages: `npm ci` when node_modules is missing or older than the lock file. */
function ensureNodeModules() {
  const stamp = join(root, 'node_modules/.package-lock.json');
  const lock = join(root, 'package-lock.json');
  if (existsSync(stamp) && statSync(stamp).mtimeMs >= statSync(lock).mtimeMs) return;
  say('installing npm packages (npm ci)...');
  if (run('npm', ['ci', '--no-audit', '--no-fund']) !== 0) {
    say('npm ci failed');
    process.exit(1);
  }
}

function tsx(script, args) {
  // Ctrl-C reaches the child too, which stops what it started; this process waits for it.
  process.on('SIGINT', () => {});
  process.on('SIGTERM', () => {});
  return run(process.execPath, ['--import', 'tsx', script, ...args]);
}

const [command = 'help', ...args] = process.argv.slice(2);
checkNode();
switch (command) {
  case 'dev':
    ensureDebianPackages();
    ensureNodeModules();
    process.exit(tsx('scripts/dev.ts', args));
    break;
  case 'cluster':
    ensureDebianPackages();
    ensureNodeModules();
    process.exit(tsx('scripts/cluster.ts', args));
    break;
  case 'test':
    ensureDebianPackages();
    ensureNodeModules();
    process.exit(tsx('scripts/test.ts', args));
    break;
  case 'admin':
    ensureNodeModules();
    process.exit(tsx('scripts/admin.ts', args));
    break;
  case 'setup':
    ensureDebianPackages();
    ensureNodeModules();
    process.exit(tsx('scripts/setup.ts', args));
    break;
  default:
    process.stdout.write(
      'usage: quire dev [--hot] | quire cluster | quire test [vitest args] | quire admin <command> | quire setup\n',
    );
    process.exit(command === 'help' ? 0 : 2);
}
