import { spawnSync } from 'node:child_process';
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, request, type Server } from 'node:http';
import { dirname, join } from 'node:path';
import { findOrBuild } from './goBuilds';
import { managedProcess, pollReady } from './processes';

/**
 * R2, R4: a real OpenID Connect provider for development and the tests: Ory Hydra (built from
 * the Go module proxy into the cache, like the Temporal programs), its state in a PostgreSQL
 * database of its own, and Quire's own small login-and-consent app, which Hydra sends people
 * to. The app knows a fixed list of people (email, password, groups) and answers Hydra's
 * login and consent challenges with their claims, `groups` among them, so the role mapping
 * (QUIRE_OIDC_ROLE_MAPPING) is exercised end to end. Not for production: an installation
 * points Quire (and the Temporal UI) at its own provider.
 */

export interface IdentityPerson {
  email: string;
  name: string;
  password: string;
  groups: string[];
  /**
   * The `email_verified` claim the provider gives (default `true`); `'omitted'` leaves it out,
   * as some providers do (X2 tests that anything but `true` links nothing).
   */
  emailVerified?: boolean | 'false' | 'omitted';
}

function emailVerifiedClaim(person: IdentityPerson): { email_verified?: boolean | string } {
  const claim = person.emailVerified ?? true;
  return claim === 'omitted' ? {} : { email_verified: claim };
}

export interface IdentityProvider {
  /** The issuer URL (Hydra's public endpoint). */
  issuer: string;
  /** X7: Hydra's admin API, on this Unix socket only (0600: the installation's user alone). */
  adminSocket: string;
  loginAppUrl: string;
  /** Where Temporal's frontend reads the keys that sign the access tokens (R4). */
  jwksUrl: string;
  tokenUrl: string;
  /**
   * Registers an OAuth client (authorization code with PKCE) and returns its credentials.
   * `temporal`: its access tokens are JWTs carrying the signed-in person's Temporal
   * permissions (the Temporal UI's client), by `temporalPermissionsByGroup`.
   */
  registerClient(input: {
    redirectUris: string[];
    clientId?: string;
    temporal?: boolean;
  }): Promise<{ clientId: string; clientSecret: string }>;
  /**
   * R4: a client of a service (no person), client-credentials grant only, whose JWT access
   * tokens carry exactly `permissions` (Quire's workers and web replicas).
   */
  registerServiceClient(input: {
    permissions: string[];
  }): Promise<{ clientId: string; clientSecret: string }>;
  stop(): Promise<void>;
}

/** The claim Temporal's default claim mapper reads (`permissionsClaimName`). */
export const TEMPORAL_PERMISSIONS_CLAIM = 'permissions';

function html(body: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Sign in</title></head><body><main>${body}</main></body></html>`;
}

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

function sameText(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

async function readForm(request: import('node:http').IncomingMessage): Promise<URLSearchParams> {
  let body = '';
  for await (const chunk of request) {
    body += chunk;
    if (body.length > 10_000) break;
  }
  return new URLSearchParams(body);
}

export interface LoginAppGrants {
  /** Clients whose access tokens carry the person's Temporal permissions. */
  temporalClients: Set<string>;
  /** A person's Temporal permissions, from their groups. */
  temporalPermissionsByGroup: Record<string, string[]>;
  /** Service clients (client-credentials) and the permissions their tokens carry. */
  servicePermissions: Map<string, string[]>;
}

/** The socket's mode: read and write for the installation's user, nobody else. */
export const ADMIN_SOCKET_MODE = 0o600;

/** One call to Hydra's admin API over its Unix socket; the body parsed as JSON when any. */
export function adminRequest(
  socketPath: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; body: unknown }> {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const req = request(
      {
        socketPath,
        method,
        path,
        headers: payload ? { 'content-type': 'application/json' } : {},
        timeout: 10_000,
      },
      (response) => {
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk) => {
          text += chunk;
        });
        response.on('end', () => {
          let parsed: unknown = text;
          try {
            parsed = text ? JSON.parse(text) : undefined;
          } catch {}
          resolve({ status: response.statusCode ?? 0, body: parsed });
        });
        response.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`hydra admin ${method} ${path}: timed out`)));
    req.on('error', reject);
    req.end(payload);
  });
}

/**
 * The login-and-consent app: GET/POST /login, GET /consent, against Hydra's admin API, and
 * POST /token-hook, which Hydra calls at every token request: it gives a service client's
 * token its permissions and leaves every other grant's claims as the consent set them.
 */
export function startLoginApp(
  adminSocket: string,
  people: IdentityPerson[],
  grants: LoginAppGrants = {
    temporalClients: new Set(),
    temporalPermissionsByGroup: {},
    servicePermissions: new Map(),
  },
): Promise<Server> {
  const admin = async (method: string, path: string, body?: unknown) => {
    const response = await adminRequest(adminSocket, method, path, body);
    if (response.status < 200 || response.status > 299) {
      throw new Error(`hydra admin ${method} ${path}: ${response.status}`);
    }
    return response.body as Record<string, unknown>;
  };
  const server = createServer(async (request, response) => {
    const url = new URL(request.url ?? '/', 'http://login.invalid');
    const redirect = (to: string) => {
      response.writeHead(302, { location: to });
      response.end();
    };
    const page = (status: number, body: string) => {
      response.writeHead(status, { 'content-type': 'text/html; charset=utf-8' });
      response.end(html(body));
    };
    try {
      if (url.pathname === '/login' && request.method === 'GET') {
        const challenge = url.searchParams.get('login_challenge') ?? '';
        const login = await admin(
          'GET',
          `/admin/oauth2/auth/requests/login?login_challenge=${encodeURIComponent(challenge)}`,
        );
        if (login.skip) {
          const accepted = await admin(
            'PUT',
            `/admin/oauth2/auth/requests/login/accept?login_challenge=${encodeURIComponent(challenge)}`,
            { subject: login.subject },
          );
          return redirect(String(accepted.redirect_to));
        }
        return page(
          200,
          `<h1>Quire development sign-in</h1>
           <form method="post" action="/login">
             <input type="hidden" name="challenge" value="${escapeHtml(challenge)}">
             <label for="username">Username</label> <input id="username" name="username" autocomplete="username">
             <label for="password">Password</label> <input id="password" name="password" type="password">
             <button type="submit">Log in</button>
           </form>`,
        );
      }
      if (url.pathname === '/login' && request.method === 'POST') {
        const form = await readForm(request);
        const challenge = form.get('challenge') ?? '';
        const person = people.find((p) => p.email === (form.get('username') ?? '').trim());
        if (!person || !sameText(person.password, form.get('password') ?? '')) {
          return page(
            401,
            '<h1>Quire development sign-in</h1><p role="alert">Wrong username or password.</p>',
          );
        }
        const accepted = await admin(
          'PUT',
          `/admin/oauth2/auth/requests/login/accept?login_challenge=${encodeURIComponent(challenge)}`,
          { subject: person.email, remember: false },
        );
        return redirect(String(accepted.redirect_to));
      }
      if (url.pathname === '/consent' && request.method === 'GET') {
        // First-party: consent is given for the person, with their claims in the ID token.
        const challenge = url.searchParams.get('consent_challenge') ?? '';
        const consent = await admin(
          'GET',
          `/admin/oauth2/auth/requests/consent?consent_challenge=${encodeURIComponent(challenge)}`,
        );
        const person = people.find((p) => p.email === consent.subject);
        if (!person) return page(403, '<p role="alert">Unknown person.</p>');
        const clientId = String((consent.client as { client_id?: unknown })?.client_id ?? '');
        // R4: only the Temporal UI's tokens carry Temporal permissions, and only an operator's
        // groups grant any; everyone else signs in there and is refused by the frontend.
        const permissions = grants.temporalClients.has(clientId)
          ? [...new Set(person.groups.flatMap((g) => grants.temporalPermissionsByGroup[g] ?? []))]
          : [];
        const accepted = await admin(
          'PUT',
          `/admin/oauth2/auth/requests/consent/accept?consent_challenge=${encodeURIComponent(challenge)}`,
          {
            grant_scope: consent.requested_scope,
            grant_access_token_audience: consent.requested_access_token_audience,
            remember: false,
            session: {
              access_token: permissions.length ? { [TEMPORAL_PERMISSIONS_CLAIM]: permissions } : {},
              id_token: {
                email: person.email,
                ...emailVerifiedClaim(person),
                name: person.name,
                groups: person.groups,
              },
            },
          },
        );
        return redirect(String(accepted.redirect_to));
      }
      if (url.pathname === '/token-hook' && request.method === 'POST') {
        let body = '';
        for await (const chunk of request) body += chunk;
        const hook = JSON.parse(body) as {
          request?: { client_id?: string; grant_types?: string[] };
        };
        const service = grants.servicePermissions.get(hook.request?.client_id ?? '');
        if (service && hook.request?.grant_types?.includes('client_credentials')) {
          response.writeHead(200, { 'content-type': 'application/json' });
          response.end(
            JSON.stringify({
              session: { access_token: { [TEMPORAL_PERMISSIONS_CLAIM]: service }, id_token: {} },
            }),
          );
          return;
        }
        // 204: the token keeps the claims its consent gave it.
        response.writeHead(204);
        response.end();
        return;
      }
      page(404, '<p>Not found.</p>');
    } catch {
      page(502, '<p role="alert">The identity provider did not answer.</p>');
    }
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

/**
 * Starts Hydra on `publicPort` (issuer) with its state in `dsn` (a PostgreSQL database,
 * created beforehand and migrated here), and the login app beside it. X7: its admin API
 * listens on a Unix socket of mode 0600 (`adminSocket`, default beside the log), on no port:
 * no other local user can accept a login, register a client or read a session.
 */
export async function startIdentityProvider(options: {
  dsn: string;
  publicPort: number;
  /** Where the admin API listens (a path of at most ~100 bytes). */
  adminSocket?: string;
  people: IdentityPerson[];
  logFile: string;
  log?: (line: string) => void;
  /** R4: the Temporal permissions each group's members get in the Temporal UI's tokens. */
  temporalPermissionsByGroup?: Record<string, string[]>;
  /** How long an access token lives (Hydra's `ttl.access_token`, e.g. `9s`; default 1h). */
  accessTokenLifespan?: string;
}): Promise<IdentityProvider> {
  const hydra = findOrBuild('hydra', options.log).hydra!;
  const adminSocket = options.adminSocket ?? join(dirname(options.logFile), 'hydra-admin.sock');
  mkdirSync(dirname(adminSocket), { recursive: true });
  // A socket left by an earlier run that did not stop would keep Hydra from listening.
  rmSync(adminSocket, { force: true });
  const issuer = `http://127.0.0.1:${options.publicPort}`;
  const grants: LoginAppGrants = {
    temporalClients: new Set(),
    temporalPermissionsByGroup: options.temporalPermissionsByGroup ?? {},
    servicePermissions: new Map(),
  };
  const loginApp = await startLoginApp(adminSocket, options.people, grants);
  const address = loginApp.address();
  const loginAppUrl = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  // R4: the permissions claim at the top level of a JWT access token, where Temporal's claim
  // mapper reads it (Hydra otherwise nests custom claims under `ext`); the token hook gives
  // service clients theirs. An array setting, so a file rather than the environment.
  const configFile = join(dirname(options.logFile), 'hydra.yaml');
  mkdirSync(dirname(configFile), { recursive: true });
  writeFileSync(
    configFile,
    [
      'oauth2:',
      '  allowed_top_level_claims:',
      `    - ${TEMPORAL_PERMISSIONS_CLAIM}`,
      '  mirror_top_level_claims: false',
      `  token_hook: ${loginAppUrl}/token-hook`,
      'serve:',
      '  admin:',
      '    socket:',
      `      mode: ${ADMIN_SOCKET_MODE}`,
      ...(options.accessTokenLifespan
        ? ['ttl:', `  access_token: ${options.accessTokenLifespan}`]
        : []),
      '',
    ].join('\n'),
  );
  const env = {
    ...process.env,
    DSN: options.dsn,
    URLS_SELF_ISSUER: issuer,
    URLS_LOGIN: `${loginAppUrl}/login`,
    URLS_CONSENT: `${loginAppUrl}/consent`,
    SECRETS_SYSTEM: randomBytes(24).toString('hex'),
    SERVE_PUBLIC_PORT: String(options.publicPort),
    SERVE_PUBLIC_HOST: '127.0.0.1',
    SERVE_ADMIN_HOST: `unix:${adminSocket}`,
    LOG_LEVEL: 'warn',
    SQA_OPT_OUT: 'true',
  };
  const migrated = spawnSync(
    hydra,
    ['migrate', 'sql', 'up', '-e', '--yes', '--config', configFile],
    {
      env,
      encoding: 'utf8',
    },
  );
  if (migrated.status !== 0) {
    loginApp.close();
    throw new Error(`hydra migrate failed: ${migrated.stderr.slice(-2000)}`);
  }
  const server = managedProcess({
    name: 'hydra',
    command: hydra,
    // --dev: the issuer is plain http on the loopback (development and tests only).
    args: ['serve', 'all', '--dev', '--sqa-opt-out', '--config', configFile],
    env,
    logFile: options.logFile,
    ready: (exited) =>
      pollReady(
        'hydra',
        async () => (await adminRequest(adminSocket, 'GET', '/health/ready')).status === 200,
        exited,
        60_000,
      ),
  });
  await server.start();
  const createClient = async (fields: Record<string, unknown>) => {
    const clientSecret = randomBytes(24).toString('hex');
    const response = await adminRequest(adminSocket, 'POST', '/admin/clients', {
      ...fields,
      client_secret: clientSecret,
      token_endpoint_auth_method: 'client_secret_basic',
    });
    if (response.status !== 201 && response.status !== 200) {
      throw new Error(`hydra client registration: ${response.status}`);
    }
    const client = response.body as { client_id: string };
    return { clientId: client.client_id, clientSecret };
  };
  return {
    issuer,
    adminSocket,
    loginAppUrl,
    jwksUrl: `${issuer}/.well-known/jwks.json`,
    tokenUrl: `${issuer}/oauth2/token`,
    async registerClient(input) {
      const client = await createClient({
        client_id: input.clientId,
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        scope: 'openid email profile groups',
        redirect_uris: input.redirectUris,
        ...(input.temporal ? { access_token_strategy: 'jwt' } : {}),
      });
      if (input.temporal) grants.temporalClients.add(client.clientId);
      return client;
    },
    async registerServiceClient(input) {
      const client = await createClient({
        grant_types: ['client_credentials'],
        response_types: [],
        scope: '',
        access_token_strategy: 'jwt',
      });
      grants.servicePermissions.set(client.clientId, input.permissions);
      return client;
    },
    async stop() {
      await server.stop(5_000);
      await new Promise((resolve) => loginApp.close(resolve));
    },
  };
}
