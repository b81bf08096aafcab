import type { Readable } from 'node:stream';

/**
 * R6: giving up on a request body without cancelling it. The web server's body stream is fed
 * by the socket's `data` events and has no cancel handler: cancelled while the client is still
 * sending, its next chunk throws "Invalid state: ReadableStream is already closed" as an
 * uncaught exception. So a refused request reads the rest of its body and throws it away;
 * the answer goes out at once, the discarding happens behind it.
 */
export function discardRest(
  body: ReadableStream<Uint8Array> | ReadableStreamDefaultReader<Uint8Array>,
): void {
  const reader = 'getReader' in body ? body.getReader() : body;
  void (async () => {
    for (;;) {
      const { done } = await reader.read();
      if (done) return;
    }
  })().catch(() => {});
}

/** The same for a body already adapted into a Node stream (`Readable.fromWeb`). */
export function discardRestOf(source: Readable): void {
  source.removeAllListeners('data');
  source.on('error', () => {});
  source.resume();
}
