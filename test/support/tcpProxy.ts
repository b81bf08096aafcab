import { createServer, type Server, type Socket, connect as tcpConnect } from 'node:net';

/**
 * A TCP proxy between a process under test and one of Quire's own services (PostgreSQL), for
 * D7 outage tests: `cut()` drops every open connection and refuses new ones on the same port
 * (ECONNREFUSED, as a database that is down), `restore()` forwards again.
 */
export interface TcpProxy {
  port: number;
  /** Connections accepted so far (a reconnect after `restore()` counts). */
  accepted(): number;
  cut(): Promise<void>;
  restore(): Promise<void>;
  close(): Promise<void>;
}

export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const open = new Set<Socket>();
  let accepted = 0;
  let server: Server | undefined;
  let port = 0;

  function listen(): Promise<void> {
    const s = createServer((client) => {
      accepted += 1;
      const upstream = tcpConnect(target.port, target.host);
      open.add(client);
      open.add(upstream);
      const drop = () => {
        client.destroy();
        upstream.destroy();
        open.delete(client);
        open.delete(upstream);
      };
      client.on('error', drop).on('close', drop);
      upstream.on('error', drop).on('close', drop);
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
