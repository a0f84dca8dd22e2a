// Connection limits (SPEC §10): running out of file descriptors must never be reachable from
// outside, from one address or many. Each client address may hold MAX_CONNECTIONS_PER_ADDRESS
// open connections (idle keep-alive and WebSocket ones included), and all addresses together
// MAX_CONNECTIONS. When the total is reached, the connection that has been idle the longest (no
// request in flight, not a WebSocket) is closed to make room; only when none is idle is the new
// connection answered 429 and closed at once. A request's headers must arrive within
// HEADERS_TIMEOUT_MS (default 10 s), so half-sent requests cannot hold connections open.
import type http from 'node:http';
import https from 'node:https';
import type { Socket } from 'node:net';
import { addressKey } from './address.js';

export interface ConnectionLimits {
  maxConnectionsPerAddress: number;
  /** All open connections together (SPEC §10: below the process's file-descriptor limit). */
  maxConnections: number;
  headersTimeoutMs: number;
}

/** The whole request (headers and body, e.g. a 10 MB upload on a slow link) within this. */
const REQUEST_TIMEOUT_MS = 300_000;
/** Idle keep-alive connections close after this; agents reuse connections, so it is long. */
const KEEP_ALIVE_TIMEOUT_MS = 65_000;

function refusal(message: string): string {
  const body = JSON.stringify({ ok: false, error: { code: 'rate_limited', message } });
  return (
    'HTTP/1.1 429 Too Many Requests\r\n' +
    'Content-Type: application/json; charset=utf-8\r\n' +
    `Content-Length: ${Buffer.byteLength(body)}\r\n` +
    'Connection: close\r\n' +
    'Retry-After: 1\r\n' +
    '\r\n' +
    body
  );
}

const PER_ADDRESS_REFUSAL = refusal('Too many open connections from this address; close some and try again');
const TOTAL_REFUSAL = refusal('The server holds as many connections as it may; try again shortly');

/** One accepted connection: how many requests it is serving, and whether it became a WebSocket. */
interface Connection {
  socket: Socket;
  inFlight: number;
  upgraded: boolean;
}

export interface ConnectionCounts {
  /** Open connections per client address. */
  perAddress: Map<string, number>;
  /** Open connections in all. */
  total(): number;
}

/** Applies the limits to a server before it listens. Returns the live counts (for tests). */
export function guardConnections(server: http.Server | https.Server, limits: ConnectionLimits): ConnectionCounts {
  server.keepAliveTimeout = KEEP_ALIVE_TIMEOUT_MS;
  server.headersTimeout = limits.headersTimeoutMs;
  server.requestTimeout = Math.max(REQUEST_TIMEOUT_MS, limits.headersTimeoutMs);
  // Node checks the two timeouts on this interval (30 s by default): check often enough that a
  // half-sent request is dropped close to its deadline.
  (server as { connectionsCheckingInterval?: number }).connectionsCheckingInterval = Math.min(1000, limits.headersTimeoutMs);

  const perAddress = new Map<string, number>();
  const connections = new Map<Socket, Connection>();
  /** Connections with nothing in flight, longest idle first (a Set keeps insertion order). */
  const idle = new Set<Connection>();
  const tls = server instanceof https.Server;

  // Under TLS the request's socket wraps the raw one the 'connection' event saw.
  const connectionOf = (socket: Socket): Connection | undefined =>
    connections.get(socket) ?? connections.get((socket as Socket & { _parent?: Socket })._parent as Socket);

  /** Closes the longest-idle connection; false when every connection is busy. */
  const evictIdle = (): boolean => {
    for (const connection of idle) {
      idle.delete(connection);
      forget(connection);
      connection.socket.destroy();
      return true;
    }
    return false;
  };

  /** Frees the connection's place at once (its 'close' event comes a tick later). */
  const forget = (connection: Connection): void => {
    if (!connections.delete(connection.socket)) return;
    idle.delete(connection);
  };

  // First in line, before the HTTP parser is attached: a refused connection is never read.
  server.prependListener('connection', (socket: Socket) => {
    const key = addressKey(socket.remoteAddress) ?? 'unknown';
    const count = perAddress.get(key) ?? 0;
    if (count >= limits.maxConnectionsPerAddress) {
      refuse(socket, tls, PER_ADDRESS_REFUSAL);
      return;
    }
    if (connections.size >= limits.maxConnections && !evictIdle()) {
      refuse(socket, tls, TOTAL_REFUSAL);
      return;
    }
    perAddress.set(key, count + 1);
    // A new connection counts as idle until its first request arrives: connections that never
    // send anything are the first to go when the total is reached.
    const connection: Connection = { socket, inFlight: 0, upgraded: false };
    connections.set(socket, connection);
    idle.add(connection);
    socket.once('close', () => {
      forget(connection);
      const left = (perAddress.get(key) ?? 1) - 1;
      if (left <= 0) perAddress.delete(key);
      else perAddress.set(key, left);
    });
  });

  server.prependListener('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
    const connection = connectionOf(req.socket);
    if (!connection) return;
    connection.inFlight += 1;
    idle.delete(connection);
    res.once('close', () => {
      connection.inFlight -= 1;
      if (connection.inFlight === 0 && !connection.upgraded && connections.has(connection.socket)) idle.add(connection);
    });
  });

  // A WebSocket is a live session, never an idle connection to close.
  server.prependListener('upgrade', (req: http.IncomingMessage) => {
    const connection = connectionOf(req.socket);
    if (!connection) return;
    connection.upgraded = true;
    idle.delete(connection);
  });

  return { perAddress, total: () => connections.size };
}

/**
 * Over plain HTTP the client gets a structured 429 before the close; under TLS the handshake
 * has not happened yet, so the connection is just closed.
 */
function refuse(socket: Socket, tls: boolean, answer: string): void {
  socket.on('error', () => undefined);
  // Nothing the client sends on this connection is read or served.
  socket.pause();
  if (tls) {
    socket.destroy();
    return;
  }
  socket.write(answer, () => socket.destroy());
}
