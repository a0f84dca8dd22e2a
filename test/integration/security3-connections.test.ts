// SPEC §10 (v3): all open connections together are capped (MAX_CONNECTIONS), idle keep-alive
// connections are closed first, and running out of file descriptors is unreachable from many
// addresses. Idle connections come from several loopback addresses, each under its own
// per-address cap, so only the total cap can hold them.
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { registerUser, startTestServer, type TestServer } from '../helpers/server.js';
import { TestSocket, wsUrl } from '../helpers/ws.js';

let server: TestServer | undefined;
const sockets: net.Socket[] = [];
afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.destroy();
  await server?.stop();
  server = undefined;
});

const MAX_CONNECTIONS = 12;
const PER_ADDRESS = 6;
const ADDRESSES = ['127.0.0.2', '127.0.0.3', '127.0.0.4', '127.0.0.5', '127.0.0.6', '127.0.0.7'];

/** A connection from `localAddress`; with `request`, one keep-alive request is answered first, then it idles. */
function idleConnection(port: number, localAddress: string, request: boolean): Promise<{ socket: net.Socket; open: () => boolean }> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port, localAddress });
    sockets.push(socket);
    let closed = false;
    socket.on('error', () => undefined);
    socket.on('close', () => (closed = true));
    socket.on('data', () => undefined);
    socket.once('connect', () => {
      if (request) socket.write('GET /api/v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: keep-alive\r\n\r\n');
      resolve({ socket, open: () => !closed });
    });
    socket.once('close', () => resolve({ socket, open: () => false }));
  });
}

describe('total connection cap', () => {
  it('never holds more than MAX_CONNECTIONS open from many addresses, closes idle ones first, keeps a WebSocket and serves afterwards', async () => {
    server = await startTestServer({ maxConnections: MAX_CONNECTIONS, maxConnectionsPerAddress: PER_ADDRESS });
    const person = await registerUser(server, 'Steady');
    const ws = await TestSocket.connect(wsUrl(server.url), person.token);
    try {
      const held: Array<{ open: () => boolean }> = [];
      // 6 addresses × 6 connections = 36, three times the cap; half of them sent a request first.
      for (const address of ADDRESSES) {
        for (let i = 0; i < PER_ADDRESS; i++) {
          held.push(await idleConnection(server.port, address, i % 2 === 0));
          // At every step the connections the server holds (the WebSocket among them) stay within the cap.
          await expect.poll(() => held.filter((c) => c.open()).length + 1).toBeLessThanOrEqual(MAX_CONNECTIONS);
        }
      }
      expect(held.filter((c) => c.open()).length).toBeGreaterThan(0);
      // The established WebSocket is still served.
      const answer = await ws.call('list_rooms');
      expect(answer.ok).toBe(true);
      // A new client is served while the idle connections are held (an idle one makes room).
      const during = await fetch(`${server.url}/api/v1/health`);
      expect(during.status).toBe(200);
      // And after they go away.
      for (const socket of sockets.splice(0)) socket.destroy();
      const after = await fetch(`${server.url}/api/v1/health`);
      expect(after.status).toBe(200);
      expect((await ws.call('list_rooms')).ok).toBe(true);
    } finally {
      ws.terminate();
    }
  });

  it('answers 429 when every held connection is busy (WebSockets are never closed for new ones)', async () => {
    server = await startTestServer({ maxConnections: 3, maxConnectionsPerAddress: 10 });
    const person = await registerUser(server, 'Holder');
    const open: TestSocket[] = [];
    try {
      for (let i = 0; i < 3; i++) open.push(await TestSocket.connect(wsUrl(server.url), person.token));
      const refused = await fetch(`${server.url}/api/v1/health`).then(
        (res) => res.status,
        () => 'reset',
      );
      expect(refused).toBe(429);
      for (const socket of open) expect((await socket.call('list_rooms')).ok).toBe(true);
    } finally {
      for (const socket of open) socket.terminate();
    }
    await expect.poll(async () => (await fetch(`${server!.url}/api/v1/health`)).status).toBe(200);
  });
});

describe('MAX_CONNECTIONS default', () => {
  it('is set below the open-file limit', async () => {
    const { defaultMaxConnections, loadConfig } = await import('../../src/config.js');
    expect(defaultMaxConnections(20_000)).toBeLessThan(20_000);
    expect(defaultMaxConnections(20_000)).toBeGreaterThan(10_000);
    expect(defaultMaxConnections(1024)).toBeLessThan(1024);
    expect(loadConfig({ MAX_CONNECTIONS: '50' }).maxConnections).toBe(50);
    expect(() => loadConfig({ MAX_CONNECTIONS: '0' })).toThrow(/MAX_CONNECTIONS/);
  });
});
