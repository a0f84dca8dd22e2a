// A TCP proxy in front of the server that tests can cut, to lose connections the way a
// network does (both sides see the socket die, nothing is closed politely).
import net from 'node:net';
import type { AddressInfo } from 'node:net';

export interface CuttableProxy {
  url: string;
  port: number;
  /** Destroys every open connection through the proxy. */
  cut(): number;
  close(): Promise<void>;
}

export async function startProxy(targetPort: number, targetHost = '127.0.0.1'): Promise<CuttableProxy> {
  const open = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(targetPort, targetHost);
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
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    cut() {
      const n = open.size / 2;
      for (const socket of [...open]) socket.destroy();
      open.clear();
      return n;
    },
    close() {
      for (const socket of open) socket.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
