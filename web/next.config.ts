import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { NextConfig } from 'next';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..');

const config: NextConfig = {
  // The console imports core/, db/ and client/ from the repository root.
  turbopack: { root },
  outputFileTracingRoot: root,
  // Native and gRPC packages run as plain Node modules, never bundled.
  serverExternalPackages: [
    '@temporalio/client',
    '@temporalio/common',
    '@temporalio/proto',
    'pg',
    'pino',
    'sharp',
  ],
  poweredByHeader: false,
  // R6: nosniff and no framing on every response, static files included. Pages get their
  // Content-Security-Policy per request from proxy.ts (a fresh nonce); the route handlers'
  // responses (API JSON, exports, IIIF, media) are data and get DATA_POLICY of
  // lib/securityHeaders.ts, written out here because Next loads this file on its own.
  async headers() {
    const dataPolicy = [
      {
        key: 'Content-Security-Policy',
        value: "default-src 'none'; frame-ancestors 'none'; sandbox",
      },
    ];
    return [
      {
        source: '/:path*',
        headers: [
          { key: 'X-Content-Type-Options', value: 'nosniff' },
          // For browsers that predate frame-ancestors.
          { key: 'X-Frame-Options', value: 'DENY' },
          { key: 'Referrer-Policy', value: 'same-origin' },
        ],
      },
      // X5: and the paths proxy.ts leaves out, so no response goes without a policy.
      ...[
        '/api/:path*',
        '/console-api/:path*',
        '/iiif/:path*',
        '/healthz',
        '/readyz',
        '/_next/static/:path*',
        '/_next/image',
        '/favicon.ico',
      ].map((source) => ({ source, headers: dataPolicy })),
    ];
  },
  // R8: an act a role may not take, posted to a server action anyway, answers 403 through
  // `forbidden()` (web/lib/session.ts requireAct) and app/forbidden.tsx, never an error page.
  experimental: { authInterrupts: true },
  reactStrictMode: true,
  output: 'standalone',
  // Tests build into a directory of their own so they never race a developer's `.next`.
  ...(process.env.QUIRE_NEXT_DIST_DIR ? { distDir: process.env.QUIRE_NEXT_DIST_DIR } : {}),
};

export default config;
