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
  ],
  poweredByHeader: false,
  // R6: nosniff and no framing on every response, static files included; the
  // Content-Security-Policy is set per request by proxy.ts (pages need a fresh nonce).
  // (Written out here: Next loads this file on its own, without the app's modules.)
  async headers() {
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
    ];
  },
  reactStrictMode: true,
  output: 'standalone',
  // Tests build into a directory of their own so they never race a developer's `.next`.
  ...(process.env.QUIRE_NEXT_DIST_DIR ? { distDir: process.env.QUIRE_NEXT_DIST_DIR } : {}),
};

export default config;
