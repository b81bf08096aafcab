import { createServer, type Server, type Socket, connect as tcpConnect } from 'node:net';

/**
 * A TCP proxy between a process under test and one of Quire's own services (PostgreSQL), for
 * D7 outage tests: `cut()` drops every open connection and refuses new ones on the same port
 * (ECONNREFUSED, as a database that is down), `restore()` forwards again. `freeze()` is the
 * service that stops answering: nothing is refused or closed, but no byte passes on any
 * connection, open or new; `thaw()` forwards on connections opened after it, while those
 * frozen stay silent for good (a black-holed path, a failover that lost their state).
 */
export interface TcpProxy {
  port: number;
  /** Connections accepted so far (a reconnect after `restore()` counts). */
  accepted(): number;
  cut(): Promise<void>;
  restore(): Promise<void>;
  freeze(): void;
  thaw(): void;
  close(): Promise<void>;
}

export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const open = new Set<Socket>();
  let accepted = 0;
  let frozen = false;
  const silence = (a: Socket, b: Socket) => {
    a.unpipe(b);
    b.unpipe(a);
    a.pause();
    b.pause();
  };
  const pairs = new Set<[Socket, Socket]>();
  let server: Server | undefined;
  let port = 0;

  function listen(): Promise<void> {
    const s = createServer((client) => {
      accepted += 1;
      const upstream = tcpConnect(target.port, target.host);
      open.add(client);
      open.add(upstream);
      const pair: [Socket, Socket] = [client, upstream];
      const drop = () => {
        client.destroy();
        upstream.destroy();
        open.delete(client);
        open.delete(upstream);
        pairs.delete(pair);
      };
      client.on('error', drop).on('close', drop);
      upstream.on('error', drop).on('close', drop);
      if (frozen) return silence(client, upstream);
      pairs.add(pair);
      client.pipe(upstream);
      upstream.pipe(client);
    });
    server = s;
    return new Promise((resolve, reject) => {
      s.once('error', reject);
      s.listen(port, '127.0.0.1', () => {
        port = (s.address() as { port: number }).port;
        resolve();
      });
    });
  }

  async function stop(): Promise<void> {
    const s = server;
    server = undefined;
    for (const socket of open) socket.destroy();
    open.clear();
    if (s) await new Promise<void>((resolve) => s.close(() => resolve()));
  }

  await listen();
  return {
    get port() {
      return port;
    },
    accepted: () => accepted,
    cut: stop,
    freeze() {
      frozen = true;
      for (const [a, b] of pairs) silence(a, b);
      pairs.clear();
    },
    thaw() {
      frozen = false;
    },
    async restore() {
      if (!server) await listen();
    },
    close: stop,
  };
}

/** `url` with its host and port replaced by the proxy's. */
export function throughProxy(url: string, proxy: TcpProxy): string {
  const u = new URL(url);
  u.hostname = '127.0.0.1';
  u.port = String(proxy.port);
  return u.toString();
}
