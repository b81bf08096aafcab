import http from 'node:http';
import https from 'node:https';
import { isIP } from 'node:net';
import { DomainError, type ErrorCode } from '../core/errors';
import { type AllowList, type LookupAll, pinnedLookup, resolveTarget, SsrfError } from './ssrf';

/**
 * F8: one GET to a URL someone else names (a IIIF manifest, its images, its transcriptions),
 * under the SSRF rules of §12: the host is resolved and every address must be public unless the
 * host is on the configured allowlist, and the socket is pinned to the address that passed, so
 * DNS rebinding cannot reach an internal address. A redirect is followed only to a URL that
 * passes the same check, at most `maxRedirects` times. The body is read up to `maxBytes` (a
 * declared or actual length above it is `iiif_too_large`) and the whole fetch, connection to
 * last byte, ends at `timeoutMs`. Refusals are `FetchRefusal`s whose message names the address
 * class or the status, never the URL's path or query.
 */

export interface GuardedFetchOptions {
  allowHosts: AllowList;
  maxBytes: number;
  timeoutMs: number;
  lookup?: LookupAll;
  maxRedirects?: number;
  /** The Accept header; default any. */
  accept?: string;
}

export interface FetchedBody {
  /** The URL the body came from, after redirects. */
  url: URL;
  contentType: string;
  bytes: Buffer;
}

export class FetchRefusal extends DomainError {
  override name = 'FetchRefusal';
  constructor(code: ErrorCode, message?: string) {
    super(code, message);
  }
}

const USER_AGENT = 'Quire-IIIF-Import/1';

/** An http(s) URL, or `iiif_invalid_url`. Credentials in a URL are refused too. */
export function fetchableUrl(raw: unknown, what = 'the URL'): URL {
  let url: URL;
  try {
    url = new URL(String(raw));
  } catch {
    throw new FetchRefusal('iiif_invalid_url', `${what} is not a URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new FetchRefusal('iiif_invalid_url', `${what} must be an http or https URL`);
  }
  if (url.username !== '' || url.password !== '') {
    throw new FetchRefusal('iiif_invalid_url', `${what} must not carry credentials`);
  }
  return url;
}

export async function guardedGet(
  target: URL,
  options: GuardedFetchOptions,
  what = 'the URL',
): Promise<FetchedBody> {
  const deadline = Date.now() + options.timeoutMs;
  let url = target;
  for (let hop = 0; ; hop++) {
    const answer = await getOnce(url, options, deadline, what);
    if (answer.redirect === undefined) return answer.body;
    if (hop >= (options.maxRedirects ?? 3)) {
      throw new FetchRefusal('iiif_fetch_failed', `${what} redirects too many times`);
    }
    let next: URL;
    try {
      next = new URL(answer.redirect, url);
    } catch {
      throw new FetchRefusal('iiif_fetch_failed', `${what} redirects to an invalid URL`);
    }
    url = fetchableUrl(next.href, what);
  }
}

type Answer = { redirect: string; body?: undefined } | { redirect?: undefined; body: FetchedBody };

async function getOnce(
  url: URL,
  options: GuardedFetchOptions,
  deadline: number,
  what: string,
): Promise<Answer> {
  let resolved: Awaited<ReturnType<typeof resolveTarget>>;
  try {
    resolved = await resolveTarget(url, { allowHosts: options.allowHosts, lookup: options.lookup });
  } catch (error) {
    if (error instanceof SsrfError) {
      throw new FetchRefusal('iiif_forbidden_target', `${what}: ${error.message}`);
    }
    throw error;
  }
  const remaining = deadline - Date.now();
  if (remaining <= 0) throw new FetchRefusal('iiif_fetch_failed', `${what} timed out`);
  const client = url.protocol === 'https:' ? https : http;
  return new Promise<Answer>((resolve, reject) => {
    let settled = false;
    const finish = (error: Error | undefined, answer?: Answer) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (error) reject(error);
      else resolve(answer!);
    };
    const req = client.request({
      method: 'GET',
      host: resolved.hostname,
      port: resolved.port,
      path: `${url.pathname}${url.search}`,
      headers: { 'user-agent': USER_AGENT, accept: options.accept ?? '*/*' },
      lookup: pinnedLookup(resolved.address, resolved.family),
      ...(url.protocol === 'https:'
        ? { servername: isIP(resolved.hostname) === 0 ? resolved.hostname : undefined }
        : {}),
      agent: false,
    });
    const timer = setTimeout(() => {
      req.destroy();
      finish(new FetchRefusal('iiif_fetch_failed', `${what} timed out`));
    }, remaining);
    req.on('error', () =>
      finish(new FetchRefusal('iiif_fetch_failed', `${what} could not be fetched`)),
    );
    req.on('response', (res) => {
      const status = res.statusCode ?? 0;
      if (status >= 300 && status < 400 && typeof res.headers.location === 'string') {
        res.resume();
        finish(undefined, { redirect: res.headers.location });
        return;
      }
      if (status !== 200) {
        res.resume();
        finish(new FetchRefusal('iiif_fetch_failed', `${what} answered HTTP ${status}`));
        return;
      }
      const declared = Number(res.headers['content-length']);
      if (Number.isFinite(declared) && declared > options.maxBytes) {
        req.destroy();
        finish(
          new FetchRefusal('iiif_too_large', `${what} is larger than ${options.maxBytes} bytes`),
        );
        return;
      }
      const chunks: Buffer[] = [];
      let total = 0;
      res.on('data', (chunk: Buffer) => {
        total += chunk.length;
        if (total > options.maxBytes) {
          req.destroy();
          finish(
            new FetchRefusal('iiif_too_large', `${what} is larger than ${options.maxBytes} bytes`),
          );
          return;
        }
        chunks.push(chunk);
      });
      res.on('end', () =>
        finish(undefined, {
          body: {
            url,
            contentType: String(res.headers['content-type'] ?? '').toLowerCase(),
            bytes: Buffer.concat(chunks),
          },
        }),
      );
      const broken = () =>
        finish(new FetchRefusal('iiif_fetch_failed', `${what} could not be read`));
      res.on('error', broken);
      // After `end` this changes nothing; before it, the body was cut short.
      res.on('close', broken);
    });
    req.end();
  });
}
