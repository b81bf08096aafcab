import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import { errorBody, httpErrorOf } from '../../web/lib/errors';

/**
 * The web's batch upload route behind a bare HTTP server, for benchmarks that measure the
 * ingest alone (memory, upload-to-commit) without Next's router: `POST /ws/<id>/batches`
 * hands the streamed body to `ingest` as the route handler gets it, and maps its errors as
 * the API does; `POST /ws/<id>/console-batches` is the console's upload, whose pages a person
 * waits for (P8, `console`). `other` answers any other request first, when it wants to.
 * Prints `LISTENING <port>` when ready.
 */
export function serveIngest(options: {
  ingest: (workspaceId: number, request: Request, from: 'api' | 'console') => Promise<unknown>;
  other?: (req: IncomingMessage, res: ServerResponse) => boolean;
}): void {
  const server = createServer(async (req, res) => {
    if (options.other?.(req, res)) return;
    const match = /^\/ws\/(\d+)\/(batches|console-batches)$/.exec(req.url ?? '');
    if (req.method !== 'POST' || !match) {
      res.statusCode = 404;
      res.end();
      return;
    }
    const headers = new Headers();
    for (const [name, value] of Object.entries(req.headers)) {
      if (typeof value === 'string') headers.set(name, value);
    }
    const request = new Request(`http://localhost${req.url}`, {
      method: 'POST',
      headers,
      body: Readable.toWeb(req) as ReadableStream<Uint8Array>,
      duplex: 'half',
    } as RequestInit);
    res.setHeader('content-type', 'application/json');
    try {
      const from = match[2] === 'console-batches' ? 'console' : 'api';
      const result = await options.ingest(Number(match[1]), request, from);
      res.statusCode = 201;
      res.end(JSON.stringify(result));
    } catch (error) {
      const mapped = httpErrorOf(error);
      res.statusCode = mapped?.status ?? 500;
      res.end(JSON.stringify(mapped?.body ?? errorBody('internal', 'internal error')));
    }
  });
  server.listen(0, '127.0.0.1', () => {
    const address = server.address();
    process.stdout.write(
      `LISTENING ${typeof address === 'object' && address ? address.port : 0}\n`,
    );
  });
}
