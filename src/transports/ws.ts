// WebSocket hub at /ws (SPEC §8): accepts and authenticates sockets, opens an authenticated one
// (its rooms subscribed, `auth_ok`), closes sockets whose token was revoked, and keeps them alive
// with pings. What a socket sends is handled in ws-dispatch.ts; subscriptions, replays and the
// fan-out of room events live in ws-subscriptions.ts; one socket's state and write path in
// ws-session.ts.
import type http from 'node:http';
import type https from 'node:https';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import type { App } from '../app.js';
import type { Caller } from '../types.js';
import type { MountFactory } from './mount.js';
import { CLOSE, type RoomCursor } from '../protocol/frames.js';
import { WsDispatch } from './ws-dispatch.js';
import { Session } from './ws-session.js';
import { WsSubscriptions } from './ws-subscriptions.js';
import { originAllowed, refuse, SocketIndex } from './ws-wire.js';

export { MAX_RATE_LIMIT_STRIKES } from './ws-subscriptions.js';

export interface WsOptions {
  /** Time a new socket has to send its auth frame (SPEC: 10 s). */
  authTimeoutMs: number;
  /** Server ping interval; a socket that has not answered the previous ping is dropped. */
  heartbeatMs: number;
  /** Unsent bytes after which a socket counts as a slow consumer and is dropped (1 MiB). */
  maxBufferedBytes: number;
  /** Live events that may wait behind one replay before the socket is dropped. */
  maxQueuedEvents: number;
  /** Replayed messages written between two waits for the socket to drain. */
  replayChunk: number;
  /** On close(): how long sockets get to finish the 1001 closing handshake. */
  shutdownGraceMs: number;
}

export const WS_DEFAULTS: Readonly<WsOptions> = {
  authTimeoutMs: 10_000,
  heartbeatMs: 30_000,
  maxBufferedBytes: 1024 * 1024,
  maxQueuedEvents: 10_000,
  replayChunk: 256,
  shutdownGraceMs: 1000,
};

export const WS_PATH = '/ws';

/** The mount serving /ws; tests pass shorter timers here, at construction. */
export function createWsMount(overrides: Partial<WsOptions> = {}): MountFactory {
  return (app) => {
    const hub = new WsHub(app, { ...WS_DEFAULTS, ...overrides });
    return {
      stats: () => hub.stats(),
      attach: (server) => hub.attach(server),
      close: () => hub.close(),
    };
  };
}

export const wsMount: MountFactory = createWsMount();

export class WsHub {
  private readonly wss: WebSocketServer;
  private readonly sessions = new Set<Session>();
  private readonly byParticipant = new SocketIndex<string, Session>();
  private readonly byToken = new SocketIndex<string, Session>();
  private readonly disposers: Array<() => void> = [];
  private heartbeat: NodeJS.Timeout | undefined;
  private server: http.Server | https.Server | undefined;
  private closing = false;
  private readonly subscriptions: WsSubscriptions;
  private readonly dispatch: WsDispatch;

  constructor(
    private readonly app: App,
    private readonly options: WsOptions,
  ) {
    this.wss = new WebSocketServer({
      noServer: true,
      maxPayload: app.config.maxFrameBytes,
      perMessageDeflate: false,
      clientTracking: false,
    });
    this.subscriptions = new WsSubscriptions(app, options, (participantId) => this.byParticipant.get(participantId));
    this.dispatch = new WsDispatch(app, this.subscriptions, (session, caller) => this.authenticate(session, caller));
    app.metrics.countSocketsWith(() => this.sessions.size);
    this.disposers.push(
      app.bus.subscribe((event) => this.subscriptions.onRoomEvent(event)),
      app.bus.subscribeAccess((event) => this.subscriptions.onAccess(event)),
      app.participants.onTokenRevoked((tokenHash) => this.onTokenRevoked(tokenHash)),
    );
  }

  stats(): { sockets: number; authenticated: number; rooms: number } {
    let authenticated = 0;
    for (const s of this.sessions) if (s.state === 'open') authenticated++;
    return { sockets: this.sessions.size, authenticated, rooms: this.subscriptions.rooms };
  }

  attach(server: http.Server | https.Server): void {
    this.server = server;
    server.on('upgrade', this.onUpgrade);
    this.startHeartbeat();
  }

  async close(): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    this.server?.off('upgrade', this.onUpgrade);
    clearInterval(this.heartbeat);
    for (const dispose of this.disposers) dispose();
    const closed = [...this.sessions].map(
      (s) =>
        new Promise<void>((resolve) => {
          if (s.ws.readyState === 3) return resolve();
          s.ws.once('close', () => resolve());
          s.close(CLOSE.GOING_AWAY);
        }),
    );
    const grace = new Promise<void>((resolve) => setTimeout(resolve, this.options.shutdownGraceMs).unref());
    await Promise.race([Promise.all(closed), grace]);
    for (const s of this.sessions) s.ws.terminate();
    await new Promise<void>((resolve) => this.wss.close(() => resolve()));
  }

  // ── connections ──

  private readonly onUpgrade = (req: http.IncomingMessage, socket: Duplex, head: Buffer): void => {
    let pathname: string;
    try {
      pathname = new URL(req.url ?? '/', 'http://localhost').pathname;
    } catch {
      pathname = '';
    }
    if (pathname !== WS_PATH) {
      // Another mount may serve this path; answer only when nobody else listens.
      if (this.server?.listenerCount('upgrade') === 1) refuse(socket, 404, 'Not Found', `No WebSocket endpoint at ${pathname}. Use ${WS_PATH}.`);
      return;
    }
    if (this.closing) return refuse(socket, 503, 'Service Unavailable', 'The server is shutting down.');
    const origin = req.headers.origin;
    if (origin !== undefined && !originAllowed(origin, this.app.config.allowedOrigins)) {
      return refuse(
        socket,
        403,
        'Forbidden',
        `Origin "${origin}" is not allowed. Add it to ALLOWED_ORIGINS (now: ${this.app.config.allowedOrigins.join(',')}) to connect from that page.`,
      );
    }
    this.wss.handleUpgrade(req, socket, head, (ws) => this.onConnection(ws, socket, req.socket.remoteAddress ?? null, req.headers['accept-language'] ?? null));
  };

  private onConnection(ws: WebSocket, socket: Duplex, address: string | null, acceptLanguage: string | null): void {
    const session = new Session(ws, this.options, address, socket);
    session.acceptLanguage = acceptLanguage;
    this.sessions.add(session);
    session.authTimer = setTimeout(() => {
      if (session.state === 'awaiting_auth') session.closeUnauthorized('no auth frame in time');
    }, this.options.authTimeoutMs);
    ws.on('message', (data, isBinary) => this.dispatch.onFrame(session, data, isBinary));
    ws.on('pong', () => {
      session.alive = true;
    });
    ws.on('error', (err) => {
      // Oversize frames (1009) and protocol errors: ws closes the socket itself.
      this.app.logger.debug({ err, session: session.id }, 'websocket error');
    });
    ws.on('close', (code) => this.onClose(session, code));
  }

  private onClose(session: Session, code: number): void {
    clearTimeout(session.authTimer);
    const wasAuthenticated = session.state === 'open' || session.state === 'revoked';
    session.state = 'closed';
    this.sessions.delete(session);
    for (const controller of session.calls) controller.abort();
    if (session.dropped) this.app.logger.warn({ session: session.id, reason: session.dropped }, 'websocket dropped');
    if (!session.caller) return;
    this.subscriptions.unindexAll(session);
    this.byParticipant.delete(session.caller.id, session);
    this.byToken.delete(session.caller.tokenHash, session);
    if (wasAuthenticated) {
      try {
        this.app.presence.socketClosed(session.caller.id);
      } catch (err) {
        this.app.logger.error({ err }, 'presence update failed');
      }
    }
    this.app.logger.debug({ session: session.id, code }, 'websocket closed');
  }

  // ── authentication ──

  private authenticate(session: Session, caller: Caller): void {
    this.dispatch.settle(session, this.open(session, caller), () => session.closeUnauthorized('could not read your rooms'));
  }

  private async open(session: Session, caller: Caller): Promise<void> {
    clearTimeout(session.authTimer);
    const open = this.byParticipant.get(caller.id)?.size ?? 0;
    if (open >= this.app.config.maxSocketsPerToken) {
      return session.close(CLOSE.POLICY_VIOLATION, `at most ${this.app.config.maxSocketsPerToken} sockets per participant (MAX_SOCKETS_PER_TOKEN)`);
    }
    session.state = 'open';
    session.caller = caller;
    this.byParticipant.add(caller.id, session);
    this.byToken.add(caller.tokenHash, session);
    for (const roomId of await this.app.store.roomsOf(caller.id)) {
      // Membership in the room state is the truth (isolation).
      const runtime = await this.app.rooms.runtime(roomId);
      if (!runtime?.room.members.some((m) => m.participant_id === caller.id) || !session.isOpen) continue;
      // Joined while this loop ran (onAccess subscribed it already), or live from here on: its
      // events wait in the queue until auth_ok is out.
      if (!session.subs.has(roomId)) this.subscriptions.addSub(session, roomId, runtime.committedSeq, true);
    }
    if (!session.isOpen || session.state !== 'open') return;
    const rooms: RoomCursor[] = [...session.subs].map(([roomId, sub]) => ({ room_id: roomId, last_seq: sub.lastSent }));
    try {
      this.app.presence.socketOpened(caller.id);
    } catch (err) {
      this.app.logger.error({ err }, 'presence update failed');
    }
    const { tokenHash: _tokenHash, ...who } = caller;
    // The id also under the name registration and login return it (`agent_id` / `user_id`).
    const participant = { ...who, [caller.kind === 'agent' ? 'agent_id' : 'user_id']: caller.id };
    session.send({ type: 'auth_ok', participant, rooms, server_time: new Date(this.app.now()).toISOString() });
    session.greeted = true;
    for (const sub of session.subs.values()) session.flush(sub);
    // SPEC §8: a socket that joins a room where it holds the turn gets its agent_turn again,
    // without waiting for a subscribe (an agent restarted mid-turn answers at once).
    for (const { room_id } of rooms) await this.subscriptions.resendTurn(session, room_id);
    // Then what the client sent behind its auth, in order.
    const early = session.early ?? [];
    session.early = null;
    for (const { data, isBinary } of early) if (session.isOpen) this.dispatch.onFrame(session, data, isBinary);
  }

  /**
   * The token stopped working: its sockets stop receiving at once and close with 4401 once
   * their in-flight calls answered (so `rotate_token` over the socket still gets its result).
   */
  private onTokenRevoked(tokenHash: string): void {
    const sessions = this.byToken.get(tokenHash);
    if (!sessions) return;
    for (const session of [...sessions]) {
      if (session.state !== 'open') continue;
      session.state = 'revoked';
      this.subscriptions.unindexAll(session);
      if (session.calls.size === 0) session.closeUnauthorized('token revoked');
      else for (const controller of session.calls) controller.abort();
    }
  }

  private startHeartbeat(): void {
    clearInterval(this.heartbeat);
    this.heartbeat = setInterval(() => {
      for (const session of this.sessions) {
        if (!session.alive) {
          session.drop('no pong');
          continue;
        }
        session.alive = false;
        if (session.ws.readyState === 1) session.ws.ping();
      }
      this.recheckTokens();
    }, this.options.heartbeatMs);
    this.heartbeat.unref();
  }

  /**
   * Several nodes: the open sockets' tokens are checked in the store once a heartbeat (one read
   * for all), so a socket that only listens still closes after a revocation whose announcement
   * this node missed. Nothing to do on a single node (revocations happen here).
   */
  private recheckTokens(): void {
    if (!this.app.participants.isShared) return;
    const hashes = new Set<string>();
    for (const session of this.sessions) if (session.state === 'open' && session.caller) hashes.add(session.caller.tokenHash);
    this.app.participants.recheckMany([...hashes]).catch((err: unknown) => this.app.logger.warn({ err }, 'could not re-check socket tokens'));
  }
}
