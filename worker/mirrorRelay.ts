import http from 'node:http';
import https from 'node:https';
import { isIP } from 'node:net';
import { performance } from 'node:perf_hooks';
import { cappedBackoffMs } from '../core/backoff';
import type { Logger } from '../core/logger';
import { redact, redactError } from '../core/redact';
import {
  type ClaimedMirrorRow,
  claimDueMirrorRows,
  markMirrorDelivered,
  markMirrorFailed,
} from '../db/mirrorOutbox';
import type { Pool } from '../db/pool';
import {
  type AllowList,
  type LookupAll,
  parseAllowHosts,
  pinnedLookup,
  resolveTarget,
  SsrfError,
} from '../net/ssrf';

/**
 * E3 mirror delivery: one pass over the due rows of `mirror_outbox`, each an HTTP PUT of the
 * published AnnotationPage to `<QUIRE_MIRROR_URL>/<pageId>`. The target is resolved and checked
 * by the SSRF guard immediately before connecting and the socket is pinned to the checked
 * address; redirects are never followed. A failure is retried with capped, jittered exponential
 * backoff. A claim leases its page (db/mirrorOutbox.ts): a newer publication that arrives during
 * the PUT waits for the PUT to answer and is sent on the next pass, so PUTs of one page never
 * overlap and the mirror ends on the newest revision (the row coalesces: revisions published
 * meanwhile are skipped, never sent out of order). Logs carry page ids, revisions, status codes
 * and redacted errors, never the snapshot.
 */
export interface DeliverMirrorOptions {
  pool: Pool;
  /** Base URL (config QUIRE_MIRROR_URL). Without one the pass does nothing. */
  mirrorUrl?: string;
  /** Config QUIRE_WEBHOOK_ALLOW_HOSTS (development and tests only); default none. */
  allowHosts?: AllowList | string;
  lookup?: LookupAll;
  /** Extra trust anchors for a test's self-signed mirror. */
  ca?: string | Buffer;
  limit?: number;
  leaseMs?: number;
  timeoutMs?: number;
  baseBackoffMs?: number;
  maxBackoffMs?: number;
  logger?: Logger;
  random?: () => number;
}

export interface MirrorPassResult {
  claimed: number;
  delivered: number;
  failed: number;
}

const MAX_RESPONSE_BYTES = 64 * 1024;
const IIIF_MEDIA_TYPE =
  'application/ld+json;profile="http://iiif.io/api/presentation/3/context.json"';

export async function deliverMirrorOutbox(
  options: DeliverMirrorOptions,
): Promise<MirrorPassResult> {
  const mirrorUrl = options.mirrorUrl;
  const result: MirrorPassResult = { claimed: 0, delivered: 0, failed: 0 };
  if (!mirrorUrl) return result;
  const allowHosts =
    typeof options.allowHosts === 'object'
      ? options.allowHosts
      : parseAllowHosts(options.allowHosts);
  const timeoutMs = options.timeoutMs ?? 15_000;
  const rows = await claimDueMirrorRows(options.pool, {
    limit: options.limit ?? 20,
    // Never shorter than the PUT (its timeout, plus the target check before it): the lease is
    // what keeps two PUTs of one page apart.
    leaseMs: Math.max(options.leaseMs ?? timeoutMs + 30_000, timeoutMs + 5_000),
  });
  result.claimed = rows.length;
  await Promise.all(
    rows.map(async (row) => {
      const sent = await putSnapshot(mirrorUrl, row, {
        allowHosts,
        lookup: options.lookup,
        ca: options.ca,
        timeoutMs,
      });
      if (sent.ok) {
        await markMirrorDelivered(options.pool, row);
        result.delivered += 1;
        options.logger?.info(
          {
            component: 'mirror-relay',
            pageId: row.pageId,
            revision: row.revision,
            status: sent.statusCode,
            latencyMs: sent.latencyMs,
          },
          'mirror delivered',
        );
        return;
      }
      const delay = cappedBackoffMs(
        row.attempts,
        options.baseBackoffMs ?? 5_000,
        options.maxBackoffMs ?? 3_600_000,
        options.random,
      );
      const error = sent.error ?? `mirror answered ${sent.statusCode}`;
      await markMirrorFailed(options.pool, row, error, new Date(Date.now() + delay));
      result.failed += 1;
      options.logger?.warn(
        {
          component: 'mirror-relay',
          pageId: row.pageId,
          revision: row.revision,
          status: sent.statusCode,
          error,
          retryInMs: delay,
        },
        'mirror delivery failed',
      );
    }),
  );
  return result;
}

interface PutResult {
  ok: boolean;
  statusCode?: number;
  latencyMs: number;
  error?: string;
}

async function putSnapshot(
  base: string,
  row: ClaimedMirrorRow,
  options: { allowHosts: AllowList; lookup?: LookupAll; ca?: string | Buffer; timeoutMs: number },
): Promise<PutResult> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  let target: Awaited<ReturnType<typeof resolveTarget>>;
  try {
    const url = new URL(`${base.replace(/\/+$/, '')}/${row.pageId}`);
    if (url.username !== '' || url.password !== '')
      throw new SsrfError('target carries credentials');
    target = await resolveTarget(url, { allowHosts: options.allowHosts, lookup: options.lookup });
    // Plain http only for an explicitly allowlisted development target.
    if (url.protocol !== 'https:' && !(url.protocol === 'http:' && target.allowlisted)) {
      throw new SsrfError('target is not https');
    }
  } catch (error) {
    const message = error instanceof SsrfError ? error.message : 'target URL is invalid';
    return { ok: false, latencyMs: elapsed(), error: redact(`blocked: ${message}`) };
  }
  const body = JSON.stringify(row.snapshot);
  const transport = target.url.protocol === 'https:' ? https : http;
  return new Promise<PutResult>((resolve) => {
    let settled = false;
    const finish = (r: Omit<PutResult, 'latencyMs'>) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve({ ...r, latencyMs: elapsed() });
    };
    const req = transport.request({
      method: 'PUT',
      host: target.hostname,
      port: target.port,
      path: target.url.pathname,
      headers: {
        'content-type': IIIF_MEDIA_TYPE,
        'content-length': String(Buffer.byteLength(body, 'utf8')),
        'user-agent': 'Quire-Mirror/1',
        'x-quire-page-id': String(row.pageId),
        'x-quire-revision': String(row.revision),
      },
      lookup: pinnedLookup(target.address, target.family),
      servername: isIP(target.hostname) === 0 ? target.hostname : undefined,
      ca: options.ca,
      agent: false,
    } as https.RequestOptions);
    const timer = setTimeout(
      () => req.destroy(new Error(`timed out after ${options.timeoutMs} ms`)),
      options.timeoutMs,
    );
    req.on('error', (error) => finish({ ok: false, error: redactError(error) }));
    req.on('response', (res) => {
      const statusCode = res.statusCode ?? 0;
      let seen = 0;
      res.on('data', (chunk: Buffer) => {
        seen += chunk.length;
        if (seen > MAX_RESPONSE_BYTES) res.destroy();
      });
      const done = () =>
        finish({
          ok: statusCode >= 200 && statusCode < 300,
          statusCode,
          error:
            statusCode >= 200 && statusCode < 300 ? undefined : `mirror answered ${statusCode}`,
        });
      res.on('end', done);
      res.on('close', done);
      res.on('error', done);
    });
    req.end(body);
  });
}
