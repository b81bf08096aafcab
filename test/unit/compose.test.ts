import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  CLUSTER_SETTINGS_FILE,
  quireProcessEnv,
  readSettingsFile,
} from '../../scripts/lib/cluster';
import { ONE_HOST_GO_RUNTIME } from '../../scripts/lib/temporal';
import { TEMPORAL_CONFIG_DIR, temporalServerEnv } from '../../scripts/lib/temporalServer';

/** `docker-compose config` prints normalized YAML: a service's environment, key by key. */
function serviceEnvironment(config: string, service: string): Record<string, string> {
  const lines = config.split('\n');
  const start = lines.indexOf(`  ${service}:`);
  if (start < 0) throw new Error(`no service ${service}`);
  const env: Record<string, string> = {};
  let inEnv = false;
  for (const line of lines.slice(start + 1)) {
    if (/^ {2}\S/.test(line) || /^\S/.test(line)) break;
    if (/^ {4}\S/.test(line)) {
      inEnv = line === '    environment:';
      continue;
    }
    const match = inEnv ? /^ {6}([A-Z0-9_]+): ?(.*)$/.exec(line) : null;
    if (match) env[match[1]!] = match[2]!.replace(/^['"]|['"]$/g, '');
  }
  return env;
}

let printed: string | undefined;
function composeConfig(): string {
  // docker-compose comes from scripts/apt-packages.txt; no Docker engine is needed to check.
  printed ??= execFileSync('docker-compose', ['config'], { encoding: 'utf8' });
  return printed;
}

describe('docker-compose.yml', () => {
  it('D2 is valid for docker-compose and brings up every part of the production topology', () => {
    const config = composeConfig();
    for (const service of [
      'postgres',
      'temporal-schema',
      'temporal',
      'temporal-setup',
      'temporal-ui',
      'object-store',
      'object-store-setup',
      'migrate',
      'worker',
      'web-1',
      'web-2',
    ]) {
      expect(config).toMatch(new RegExp(`^  ${service}:$`, 'm'));
    }
    expect(config).toMatch(/replicas: 3/);
    expect(execFileSync('docker-compose', ['config', '-q'], { encoding: 'utf8' })).toBe('');
    // docker-compose is a Python program: two runs take seconds on a loaded 2-core machine.
  }, 30_000);

  it('R4 compose publishes neither the Temporal frontend (7233) nor the Temporal UI beyond its network, and the UI signs people in with OIDC, write actions off', () => {
    const config = composeConfig();
    const published = [...config.matchAll(/published: "?(\d+)"?/g)].map((m) => m[1]);
    expect(published).not.toContain('7233');
    expect(published).not.toContain('8233');
    expect(published).not.toContain('8080');
    const ui = serviceEnvironment(config, 'temporal-ui');
    expect(ui.TEMPORAL_AUTH_ENABLED).toBe('true');
    expect(ui.TEMPORAL_DISABLE_WRITE_ACTIONS).toBe('true');
    const template = readFileSync('deploy/temporal/ui.yaml', 'utf8');
    expect(template).toMatch(
      /auth:\n {2}enabled: \{\{ env "TEMPORAL_AUTH_ENABLED" \| default "true" \}\}/,
    );
    expect(template).toMatch(/type: oidc/);
    expect(template).toMatch(
      /disableWriteActions: \{\{ if eq \(env "TEMPORAL_UI_WRITE_ACTIONS"\) "true" \}\}false\{\{ else \}\}true/,
    );
  }, 30_000);

  it('D2 compose and cluster mode give every Quire process the same settings, from the same files', () => {
    const config = composeConfig();
    const clusterNames = Object.keys(
      quireProcessEnv({
        shared: readSettingsFile(CLUSTER_SETTINGS_FILE),
        databaseUrl: 'postgres://x',
        temporalAddress: 'x:7233',
        uiUrl: 'http://x',
        publicUrl: 'http://x',
        secretKey: 'k',
        objectStore: { endpoint: 'http://x', accessKeyId: 'a', secretAccessKey: 's' },
        workflowBundle: '/b.js',
      }),
    ).sort();
    for (const service of ['worker', 'web-1', 'web-2', 'migrate']) {
      expect(Object.keys(serviceEnvironment(config, service)).sort()).toEqual(clusterNames);
    }
    // The shared file's values reach compose as they are.
    const shared = readSettingsFile(CLUSTER_SETTINGS_FILE);
    const worker = serviceEnvironment(config, 'worker');
    for (const [name, value] of Object.entries(shared)) expect(worker[name]).toBe(value);
    const compose = readFileSync('docker-compose.yml', 'utf8');
    expect(compose).toContain(`env_file: ${CLUSTER_SETTINGS_FILE}`);
    expect(compose).toContain(`./${TEMPORAL_CONFIG_DIR}:/etc/quire/temporal:ro`);
  });

  it('D2 the Temporal server gets the settings its template reads, in compose and in cluster mode', () => {
    const template = readFileSync(`${TEMPORAL_CONFIG_DIR}/server.yaml`, 'utf8');
    const read = new Set([...template.matchAll(/env "([A-Z_]+)"/g)].map((m) => m[1]));
    const cluster = Object.keys(
      temporalServerEnv(
        {
          host: 'h',
          port: 1,
          user: 'u',
          database: 'temporal',
          visibilityDatabase: 'temporal_visibility',
        },
        7233,
        '/root',
      ),
    ).filter((name) => name !== 'PATH' && !(name in ONE_HOST_GO_RUNTIME));
    expect(new Set(cluster)).toEqual(read);
    // Compose sets the same names; the broadcast address is the container's, set at start.
    const compose = Object.keys(serviceEnvironment(composeConfig(), 'temporal'));
    expect(new Set([...compose, 'TEMPORAL_BROADCAST_ADDRESS'])).toEqual(read);
  });

  it('D14 history shards and closed-workflow retention are settings; compose defaults to a production count', () => {
    const temporal = serviceEnvironment(composeConfig(), 'temporal');
    expect(temporal.TEMPORAL_HISTORY_SHARDS).toBe('512');
    expect(composeConfig()).toContain('--retention 72h');
    const db = { host: 'h', port: 1, user: 'u', database: 't', visibilityDatabase: 'v' };
    const before = process.env.TEMPORAL_HISTORY_SHARDS;
    process.env.TEMPORAL_HISTORY_SHARDS = '1024';
    try {
      expect(temporalServerEnv(db, 7233, '/root').TEMPORAL_HISTORY_SHARDS).toBe('1024');
    } finally {
      if (before === undefined) delete process.env.TEMPORAL_HISTORY_SHARDS;
      else process.env.TEMPORAL_HISTORY_SHARDS = before;
    }
  });

  it('X7 compose keeps PostgreSQL, the Temporal server and the object store on an internal network with no port published, every database role with its own password', () => {
    const config = composeConfig();
    expect(config).toMatch(/^networks:\n(?: {2}.*\n)*? {2}internal:\n {4}internal: true$/m);
    const networksOf = (service: string) => {
      const block = new RegExp(`^ {2}${service}:\n((?: {4}.*\n| {6}.*\n)*)`, 'm').exec(config);
      const body = block?.[1] ?? '';
      return {
        networks: [
          ...(/^ {4}networks:\n((?: {6}.*\n)*)/m.exec(body)?.[1] ?? '').matchAll(
            /^ {6}([a-z-]+):/gm,
          ),
        ].map((m) => m[1]),
        published: /^ {4}ports:/m.test(body),
      };
    };
    for (const service of [
      'postgres',
      'temporal',
      'temporal-schema',
      'temporal-setup',
      'object-store',
    ]) {
      expect({ service, ...networksOf(service) }).toEqual({
        service,
        networks: ['internal'],
        published: false,
      });
    }
    // The console is published from the edge network and reaches the internal services.
    expect(networksOf('web-1')).toEqual({ networks: ['edge', 'internal'], published: true });
    // Passwords from .env, none written in the file; no trust; each role its own.
    const postgres = serviceEnvironment(config, 'postgres');
    expect(postgres.POSTGRES_INITDB_ARGS).toBe(
      '--auth-local=scram-sha-256 --auth-host=scram-sha-256',
    );
    const compose = readFileSync('docker-compose.yml', 'utf8');
    expect(compose).toContain(`POSTGRES_PASSWORD: \${POSTGRES_PASSWORD:-}`);
    expect(compose).toContain(`postgres://quire:\${QUIRE_DB_PASSWORD:-}@postgres:5432/quire`);
    expect(compose).toContain(`TEMPORAL_DB_PASSWORD: \${TEMPORAL_DB_PASSWORD:-}`);
    expect(compose).not.toMatch(/PASSWORD: quire|quire:quire@|--pw /);
    const roles = readFileSync('deploy/postgres/init-roles.sh', 'utf8');
    expect(roles).toMatch(/CREATE ROLE quire LOGIN PASSWORD :'quire_password'/);
    expect(roles).toMatch(/CREATE ROLE temporal LOGIN PASSWORD :'temporal_password'/);
    expect(serviceEnvironment(config, 'temporal').TEMPORAL_DB_USER).toBe('temporal');
  }, 30_000);

  it('registers every search attribute the workflows upsert', () => {
    const compose = readFileSync('docker-compose.yml', 'utf8');
    for (const name of [
      'QuireWorkspaceId=Int',
      'QuireJobId=Keyword',
      'QuirePageId=Int',
      'QuireStatus=Keyword',
      'QuireProvider=Keyword',
    ]) {
      expect(compose).toContain(name);
    }
  });
});
