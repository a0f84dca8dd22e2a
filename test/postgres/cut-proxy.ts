// A TCP proxy in front of PostgreSQL that can cut a connection at an exact moment, to make a
// commit's outcome unknown to the client: drop the next query before the server sees it, or
// let the server run it and drop the answer. It can also hold back a statement the client sends
// (and everything after it on that connection), as if the client died just before sending it.
import net from 'node:net';

export type CutMode = 'before-server' | 'after-server';

export interface CutProxy {
  url: string;
  /** The next chunk in the given direction is swallowed and both sides of its connection closed. */
  cutNext(mode: CutMode): void;
  /**
   * The first client → server chunk from now on that `match` accepts, and everything after it on
   * its connection, is never forwarded (the connection stays open, the client waits). Resolves
   * once a chunk was held.
   */
  holdWhen(match: (chunk: Buffer) => boolean): Promise<void>;
  close(): Promise<void>;
}

export async function startCutProxy(targetPort: number, database: string): Promise<CutProxy> {
  let armed: CutMode | null = null;
  let hold: { match: (chunk: Buffer) => boolean; held: () => void } | null = null;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(targetPort, '127.0.0.1');
    sockets.add(client).add(upstream);
    let holding = false;
    const cut = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('data', (chunk) => {
      if (holding) return;
      if (hold?.match(chunk)) {
        holding = true;
        hold.held();
        hold = null;
        return;
      }
      if (armed === 'before-server') {
        armed = null;
        return cut();
      }
      upstream.write(chunk);
    });
    upstream.on('data', (chunk) => {
      if (armed === 'after-server') {
        armed = null;
        return cut();
      }
      client.write(chunk);
    });
    for (const socket of [client, upstream]) {
      socket.on('error', cut);
      socket.on('close', () => {
        sockets.delete(socket);
        cut();
      });
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    url: `postgres://postgres@127.0.0.1:${port}/${database}`,
    cutNext(mode) {
      armed = mode;
    },
    holdWhen(match) {
      return new Promise<void>((held) => {
        hold = { match, held };
      });
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
