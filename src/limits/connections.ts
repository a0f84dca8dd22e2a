// Connection limits (SPEC §10): running out of file descriptors must never be reachable from
// outside. Each client address may hold MAX_CONNECTIONS_PER_ADDRESS open connections (idle
// keep-alive and WebSocket ones included); the next is answered 429 and closed at once, while
// other addresses are served as usual. A request's headers must arrive within
// HEADERS_TIMEOUT_MS (default 10 s), so half-sent requests cannot hold connections open.
import type http from 'node:http';
import https from 'node:https';
import type { Socket } from 'node:net';
import { addressKey } from './address.js';

export interface ConnectionLimits {
  maxConnectionsPerAddress: number;
  headersTimeoutMs: number;
}

/** The whole request (headers and body, e.g. a 10 MB upload on a slow link) within this. */
const REQUEST_TIMEOUT_MS = 300_000;
/** Idle keep-alive connections close after this; agents reuse connections, so it is long. */
const KEEP_ALIVE_TIMEOUT_MS = 65_000;

const REFUSAL_BODY = JSON.stringify({
  ok: false,
  error: { code: 'rate_limited', message: 'Too many open connections from this address; close some and try again' },
});
const REFUSAL =
  'HTTP/1.1 429 Too Many Requests\r\n' +
  'Content-Type: application/json; charset=utf-8\r\n' +
  `Content-Length: ${Buffer.byteLength(REFUSAL_BODY)}\r\n` +
  'Connection: close\r\n' +
  'Retry-After: 1\r\n' +
  '\r\n' +
  REFUSAL_BODY;

/** Applies the limits to a server before it listens. Returns the live per-address counts (for tests). */
export function guardConnections(server: http.Server | https.Server, limits: ConnectionLimits): Map<string, number> {
  server.keepAliveTimeout = KEEP_ALIVE_TIMEOUT_MS;
  server.headersTimeout = limits.headersTimeoutMs;
  server.requestTimeout = Math.max(REQUEST_TIMEOUT_MS, limits.headersTimeoutMs);
  // Node checks the two timeouts on this interval (30 s by default): check often enough that a
  // half-sent request is dropped close to its deadline.
  (server as { connectionsCheckingInterval?: number }).connectionsCheckingInterval = Math.min(1000, limits.headersTimeoutMs);

  const open = new Map<string, number>();
  const tls = server instanceof https.Server;
  // First in line, before the HTTP parser is attached: a refused connection is never read.
  server.prependListener('connection', (socket: Socket) => {
    const key = addressKey(socket.remoteAddress) ?? 'unknown';
    const count = open.get(key) ?? 0;
    if (count >= limits.maxConnectionsPerAddress) {
      refuse(socket, tls);
      return;
    }
    open.set(key, count + 1);
    socket.once('close', () => {
      const left = (open.get(key) ?? 1) - 1;
      if (left <= 0) open.delete(key);
      else open.set(key, left);
    });
  });
  return open;
}

/**
 * Over plain HTTP the client gets a structured 429 before the close; under TLS the handshake
 * has not happened yet, so the connection is just closed.
 */
function refuse(socket: Socket, tls: boolean): void {
  socket.on('error', () => undefined);
  // Nothing the client sends on this connection is read or served.
  socket.pause();
  if (tls) {
    socket.destroy();
    return;
  }
  socket.write(REFUSAL, () => socket.destroy());
}
