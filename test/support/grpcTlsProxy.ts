import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http2 from 'node:http2';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TLSSocket } from 'node:tls';

/**
 * A TLS front for the test's Temporal dev server, as a Temporal deployment with mTLS and API
 * keys looks to Quire (D2): an HTTP/2 server with its own CA that asks every client for a
 * certificate signed by that CA, then passes each gRPC call on to the plaintext server. It
 * records, per call, the client certificate's common name and the Authorization header, so
 * tests see what each Quire process presented.
 */
export interface TlsFront {
  address: string;
  /** PEM files: the CA, and a client certificate and key signed by it. */
  files: { ca: string; clientCert: string; clientKey: string };
  serverName: string;
  calls: Array<{ path: string; clientName: string | null; authorization: string | null }>;
  close(): Promise<void>;
}

const SERVER_NAME = 'temporal.quire.test';

function openssl(dir: string, args: string[]) {
  execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' });
}

/** A throwaway CA, a server certificate for SERVER_NAME and a client certificate. */
function certificates(dir: string) {
  openssl(dir, [
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-days',
    '1',
    '-subj',
    '/CN=quire-test-ca',
    '-keyout',
    'ca.key',
    '-out',
    'ca.pem',
  ]);
  const signed = (name: string, subject: string, ext: string) => {
    writeFileSync(join(dir, `${name}.ext`), ext);
    openssl(dir, [
      'req',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-subj',
      subject,
      '-keyout',
      `${name}.key`,
      '-out',
      `${name}.csr`,
    ]);
    openssl(dir, [
      'x509',
      '-req',
      '-in',
      `${name}.csr`,
      '-CA',
      'ca.pem',
      '-CAkey',
      'ca.key',
      '-CAcreateserial',
      '-days',
      '1',
      '-extfile',
      `${name}.ext`,
      '-out',
      `${name}.pem`,
    ]);
  };
  signed(
    'server',
    `/CN=${SERVER_NAME}`,
    `subjectAltName=DNS:${SERVER_NAME}\nextendedKeyUsage=serverAuth\n`,
  );
  signed('client', '/CN=quire-fleet', 'extendedKeyUsage=clientAuth\n');
}

export async function startTlsFront(upstreamAddress: string): Promise<TlsFront> {
  const dir = mkdtempSync(join(tmpdir(), 'quire-tls-'));
  certificates(dir);
  const file = (name: string) => readFileSync(join(dir, name));
  const calls: TlsFront['calls'] = [];
  const upstream = http2.connect(`http://${upstreamAddress}`);
  upstream.on('error', () => {});
  const server = http2.createSecureServer({
    key: file('server.key'),
    cert: file('server.pem'),
    ca: file('ca.pem'),
    requestCert: true,
    rejectUnauthorized: true,
    ALPNProtocols: ['h2'],
  });
  server.on('stream', (stream, headers) => {
    const peer = (stream.session?.socket as TLSSocket | undefined)?.getPeerCertificate();
    calls.push({
      path: String(headers[':path']),
      clientName: peer?.subject?.CN ? String(peer.subject.CN) : null,
      authorization: headers.authorization ? String(headers.authorization) : null,
    });
    const forwarded: http2.OutgoingHttpHeaders = {};
    for (const [name, value] of Object.entries(headers)) {
      if (name !== ':authority' && name !== ':scheme') forwarded[name] = value;
    }
    const call = upstream.request(forwarded);
    let trailers: http2.IncomingHttpHeaders | undefined;
    call.on('response', (response) => {
      const head = { ...response };
      if (head['grpc-status'] !== undefined) {
        // A trailers-only answer (an error): headers and the end of the stream at once.
        stream.respond(head, { endStream: true });
        return;
      }
      stream.respond(head, { waitForTrailers: true });
      call.pipe(stream);
    });
    call.on('trailers', (t) => {
      trailers = t;
    });
    stream.on('wantTrailers', () =>
      stream.sendTrailers({ ...(trailers ?? { 'grpc-status': '0' }) }),
    );
    stream.pipe(call);
    const drop = () => {
      if (!call.destroyed) call.close(http2.constants.NGHTTP2_CANCEL);
    };
    stream.on('close', drop);
    stream.on('error', drop);
    call.on('error', () => {
      if (!stream.destroyed) stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR);
    });
  });
  server.on('sessionError', () => {});
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return {
    address: `127.0.0.1:${port}`,
    files: {
      ca: join(dir, 'ca.pem'),
      clientCert: join(dir, 'client.pem'),
      clientKey: join(dir, 'client.key'),
    },
    serverName: SERVER_NAME,
    calls,
    async close() {
      upstream.close();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        // Sessions held by long polls end with the test, not with the server's close.
        setTimeout(resolve, 2_000).unref();
      });
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
