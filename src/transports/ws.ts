// WebSocket hub at /ws (SPEC §8): authenticates sockets, keeps each subscribed to its
// participant's rooms, fans room events out (serialised once per event), replays history on
// `subscribe` with `after_seq`, and serves `call` frames from the same tool registry as REST.
//
// Ordering: the bus publishes a room's events synchronously in commit order and this hub
// writes them in that order. A room runtime swaps in its committed seq and publishes that
// batch's events in the same tick, so `committedSeq` is the last seq whose `message_new` was
// published: a replay reads the store up to it, later messages reach the socket live, and the
// seam has neither a gap nor a duplicate.
import type http from 'node:http';
import type https from 'node:https';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type RawData, type WebSocket } from 'ws';
import type { App } from '../app.js';
import { AppError, toWireError } from '../errors.js';
import type { AccessEvent, RoomEvent } from '../events/bus.js';
import { agentTurnData } from '../protocol/events.js';
import { presentMessage } from '../rooms/present.js';
import { memberOf } from '../runtime/commands.js';
import type { Caller } from '../types.js';
import { parseClientFrame } from './ws-frames.js';
import type { MountFactory } from './mount.js';
import { CLOSE, type CallFrame, type EventFrame, type RoomCursor } from '../protocol/frames.js';
import { Session, type RoomSub } from './ws-session.js';
import { eventWire, originAllowed, rawText, refuse, serialise, SocketIndex } from './ws-wire.js';

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

/** Calls refused with rate_limited in a row before the socket is closed with 1008. */
export const MAX_RATE_LIMIT_STRIKES = 20;

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

/** Frames a client may send behind its `auth` before `auth_ok` (kept until then). */
const MAX_EARLY_FRAMES = 64;

export class WsHub {
  private readonly wss: WebSocketServer;
  private readonly sessions = new Set<Session>();
  private readonly byRoom = new SocketIndex<string, Session>();
  private readonly byParticipant = new SocketIndex<string, Session>();
  private readonly byToken = new SocketIndex<string, Session>();
  private readonly disposers: Array<() => void> = [];
  private heartbeat: NodeJS.Timeout | undefined;
  private server: http.Server | https.Server | undefined;
  private closing = false;

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
    app.metrics.countSocketsWith(() => this.sessions.size);
    this.disposers.push(
      app.bus.subscribe((event) => this.onRoomEvent(event)),
      app.bus.subscribeAccess((event) => this.onAccess(event)),
      app.participants.onTokenRevoked((tokenHash) => this.onTokenRevoked(tokenHash)),
    );
  }

  stats(): { sockets: number; authenticated: number; rooms: number } {
    let authenticated = 0;
    for (const s of this.sessions) if (s.state === 'open') authenticated++;
    return { sockets: this.sessions.size, authenticated, rooms: this.byRoom.size };
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
    ws.on('message', (data, isBinary) => this.onFrame(session, data, isBinary));
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
    this.unindexAll(session);
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

  private onFrame(session: Session, data: RawData, isBinary: boolean): void {
    session.alive = true;
    if (session.early) {
      // Behind an `auth` still being answered: handled right after auth_ok, in order.
      if (session.early.length >= MAX_EARLY_FRAMES) return session.close(CLOSE.POLICY_VIOLATION, `at most ${MAX_EARLY_FRAMES} frames before auth_ok`);
      session.early.push({ data, isBinary });
      return;
    }
    const text = isBinary ? '' : rawText(data);
    const parsed = parseClientFrame(text);
    if (session.state === 'awaiting_auth') {
      if (!parsed.ok || parsed.frame.type !== 'auth') return session.closeUnauthorized('first frame must be {"type":"auth","token":…}');
      session.early = [];
      const token = parsed.frame.token;
      if (!this.app.participants.isShared) {
        const caller = this.app.participants.authenticate(token);
        if (!caller) return session.closeUnauthorized('unknown or revoked token');
        return this.authenticate(session, caller);
      }
      // A shared store (several nodes): the token may come from another node, checked there first.
      this.settle(session, this.app.participants.prime(token).then(() => {
        const caller = this.app.participants.authenticate(token);
        if (!caller) return session.closeUnauthorized('unknown or revoked token');
        if (session.state === 'awaiting_auth') this.authenticate(session, caller);
      }), () => session.closeUnauthorized('could not check the token'));
      return;
    }
    if (session.state !== 'open') return;
    if (!parsed.ok) {
      const error = toWireError(parsed.error);
      if (parsed.callId !== undefined) session.send({ type: 'result', id: parsed.callId, ok: false, error });
      else session.send({ type: 'error', error });
      return;
    }
    const frame = parsed.frame;
    switch (frame.type) {
      case 'auth':
        session.send({ type: 'error', error: { code: 'validation_error', message: 'Already authenticated' } });
        return;
      case 'subscribe':
        this.settle(session, this.checkedSubscribe(session, frame.room_id, frame.after_seq), (error) => {
          // The subscription is in an unknown state (maybe mid-replay): drop it, so the client
          // sees an error for the room and can subscribe again instead of waiting forever.
          this.removeSub(session, frame.room_id);
          session.send({ type: 'error', error, room_id: frame.room_id });
        });
        return;
      case 'unsubscribe':
        this.unsubscribe(session, frame.room_id);
        return;
      case 'call':
        this.settle(session, this.call(session, frame), (error) => session.send({ type: 'result', id: frame.id, ok: false, error }));
        return;
      case 'ping':
        session.send({ type: 'pong', server_time: new Date(this.app.now()).toISOString() });
        return;
      default: {
        const never: never = frame;
        throw new Error(`unhandled frame ${JSON.stringify(never)}`);
      }
    }
  }

  /**
   * Runs an async frame handler to the end: a failure it did not answer itself (a store read
   * that threw, say) is logged and answered through `answer`, never left as an unhandled
   * rejection that would take the process down.
   */
  private settle(session: Session, work: Promise<void>, answer: (error: ReturnType<typeof toWireError>) => void): void {
    work.catch((err: unknown) => {
      this.app.logger.error({ err, session: session.id }, 'websocket frame handler failed');
      try {
        answer(toWireError(err));
      } catch (sendErr) {
        this.app.logger.error({ err: sendErr, session: session.id }, 'websocket error answer failed');
      }
    });
  }

  private authenticate(session: Session, caller: Caller): void {
    this.settle(session, this.open(session, caller), () => session.closeUnauthorized('could not read your rooms'));
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
      if (!session.subs.has(roomId)) this.addSub(session, roomId, runtime.committedSeq, true);
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
    for (const { room_id } of rooms) await this.resendTurn(session, room_id);
    // Then what the client sent behind its auth, in order.
    const early = session.early ?? [];
    session.early = null;
    for (const { data, isBinary } of early) if (session.isOpen) this.onFrame(session, data, isBinary);
  }

  // ── subscriptions ──

  private addSub(session: Session, roomId: string, lastSent: number, replaying = false): RoomSub {
    const sub: RoomSub = { lastSent, queue: replaying ? [] : null };
    session.subs.set(roomId, sub);
    this.byRoom.add(roomId, session);
    return sub;
  }

  private removeSub(session: Session, roomId: string): boolean {
    const had = session.subs.delete(roomId);
    this.byRoom.delete(roomId, session);
    return had;
  }

  private unindexAll(session: Session): void {
    for (const roomId of [...session.subs.keys()]) this.removeSub(session, roomId);
  }

  /**
   * Several nodes: the socket's token is checked in the store first (at most every few seconds),
   * so a replay never goes to a token revoked elsewhere; a revoked one closes the socket.
   */
  private async checkedSubscribe(session: Session, roomId: string, afterSeq: number | undefined): Promise<void> {
    const participants = this.app.participants;
    const tokenHash = session.caller?.tokenHash;
    if (participants.isShared && tokenHash && !(await participants.stillValid(tokenHash))) return;
    if (session.state !== 'open') return;
    // A subscribe costs like a call (with after_seq it starts a replay of up to a chunk of the
    // room's history): it counts against the participant's budget (SPEC §10), and a socket that
    // keeps sending after rate_limited is closed like one that keeps calling.
    try {
      await this.app.limits.consumeParticipant(session.caller!.id);
    } catch (err) {
      const error = toWireError(err);
      session.send({ type: 'error', error, room_id: roomId });
      if (error.code === 'rate_limited' && ++session.rateLimitStrikes >= MAX_RATE_LIMIT_STRIKES) {
        session.close(CLOSE.POLICY_VIOLATION, 'subscribes kept coming after rate_limited');
      }
      return;
    }
    session.rateLimitStrikes = 0;
    if (session.state !== 'open') return;
    return this.subscribe(session, roomId, afterSeq);
  }

  private async subscribe(session: Session, roomId: string, afterSeq: number | undefined): Promise<void> {
    const caller = session.caller!;
    // A loaded room is checked without yielding, so no live event slips in between the check,
    // the cursor and the `subscribed` answer.
    let bound: number;
    try {
      const runtime = this.app.rooms.loaded(roomId) ?? (await this.app.rooms.require(roomId));
      memberOf(runtime.room, caller);
      bound = runtime.committedSeq;
    } catch (err) {
      session.send({ type: 'error', error: toWireError(err), room_id: roomId });
      return;
    }
    if (afterSeq === undefined) {
      // Already live: keep the cursor. Otherwise start live from what is published now.
      if (!session.subs.has(roomId)) this.addSub(session, roomId, bound);
      session.send({ type: 'subscribed', room_id: roomId, last_seq: bound });
    } else {
      const sub = this.addSub(session, roomId, Math.min(afterSeq, bound), true);
      session.send({ type: 'subscribed', room_id: roomId, last_seq: bound, after_seq: afterSeq });
      if (!(await this.replay(session, roomId, sub, afterSeq, bound))) return;
      session.flush(sub);
    }
    await this.resendTurn(session, roomId);
  }

  /** Sends the socket its agent_turn for the room again when its participant holds the turn. */
  private async resendTurn(session: Session, roomId: string): Promise<void> {
    const caller = session.caller!;
    const room = (await this.app.rooms.runtime(roomId))?.room;
    const turn = room && session.subs.has(roomId) ? agentTurnData(room, this.app.config.turnTimeoutMs) : null;
    if (!turn || turn.agent_id !== caller.id) return;
    const frame: EventFrame = { type: 'event', event: 'agent_turn', room_id: roomId, data: turn };
    session.send(frame);
  }

  /**
   * Writes message_new for seqs (afterSeq, bound] in chunks, waiting for the socket to drain
   * between chunks. Live events of the room queue up in `sub` meanwhile. False when the
   * subscription was replaced or dropped on the way.
   */
  private async replay(session: Session, roomId: string, sub: RoomSub, afterSeq: number, bound: number): Promise<boolean> {
    let seq = afterSeq + 1;
    const current = () => session.isOpen && session.subs.get(roomId) === sub;
    while (seq <= bound) {
      if (!current()) return false;
      const room = (await this.app.rooms.runtime(roomId))?.room;
      if (!room) return false;
      const limit = Math.min(this.options.replayChunk, bound - seq + 1);
      const messages = await this.app.store.readMessages(roomId, { afterSeq: seq - 1, limit });
      if (!current()) return false;
      let last: Promise<void> | undefined;
      for (const message of messages) {
        if (message.seq > bound) break;
        const frame = serialise({ event: 'message_new', room_id: roomId, data: { message: presentMessage(message, room) } });
        sub.lastSent = message.seq;
        last = session.sendAndWait(frame);
      }
      seq += limit;
      if (seq <= bound && last) await last;
    }
    return current();
  }

  private unsubscribe(session: Session, roomId: string): void {
    this.removeSub(session, roomId);
    session.send({ type: 'unsubscribed', room_id: roomId });
  }

  // ── calls ──

  private async call(session: Session, frame: CallFrame): Promise<void> {
    // Only a blocking call needs a signal; every call is counted (a revoked socket closes once
    // its calls are answered).
    const controller = this.app.registry.waits(frame.tool) ? new AbortController() : { abort: () => undefined };
    session.calls.add(controller);
    const requestId = `ws-${session.id}-${String(frame.id)}`;
    try {
      // Several nodes: a revocation whose announcement never reached this node is caught here
      // (checked in the store at most every few seconds); the socket then closes like any revoked one.
      const participants = this.app.participants;
      const tokenHash = session.caller?.tokenHash;
      if (participants.isShared && tokenHash && !(await participants.stillValid(tokenHash))) throw new AppError('unauthorized', 'Unknown or revoked token');
      const data = await this.app.registry.call(frame.tool, frame.args ?? {}, {
        caller: session.caller,
        transport: 'ws',
        address: session.address,
        acceptLanguage: session.acceptLanguage,
        requestId,
        ...(controller instanceof AbortController ? { signal: controller.signal } : {}),
      });
      session.rateLimitStrikes = 0;
      session.send({ type: 'result', id: frame.id, ok: true, data: data ?? null });
    } catch (err) {
      const error = toWireError(err);
      if (error.code === 'rate_limited' && ++session.rateLimitStrikes >= MAX_RATE_LIMIT_STRIKES) {
        session.send({ type: 'result', id: frame.id, ok: false, error });
        return session.close(CLOSE.POLICY_VIOLATION, 'calls kept coming after rate_limited');
      }
      if (error.code === 'internal_error') this.app.logger.error({ err, requestId, tool: frame.tool }, 'websocket call failed');
      session.send({ type: 'result', id: frame.id, ok: false, error });
    } finally {
      session.calls.delete(controller);
      if (session.state === 'revoked' && session.calls.size === 0) session.closeUnauthorized('token revoked');
    }
  }

  // ── bus ──

  private onRoomEvent(event: RoomEvent): void {
    const seq = event.event === 'message_new' ? event.data.message.seq : 0;
    const sessions = this.byRoom.get(event.room_id);
    if (!sessions || sessions.size === 0) return;
    const wire = eventWire(event);
    for (const session of sessions) session.deliver(event.room_id, wire, seq);
  }

  private onAccess(event: AccessEvent): void {
    if (event.type === 'token_revoked') return; // handled per token through onTokenRevoked
    const sessions = this.byParticipant.get(event.participant_id);
    if (!sessions) return;
    for (const session of sessions) {
      if (session.state !== 'open') continue;
      if (event.type === 'joined') {
        if (session.subs.has(event.room_id)) continue;
        // Access events are published in the committing tick, before the batch's room events.
        const cursor = this.committedSeq(event.room_id);
        // Before auth_ok the room is simply among those auth_ok lists (its events held till then).
        this.addSub(session, event.room_id, cursor, !session.greeted);
        if (session.greeted) session.send({ type: 'subscribed', room_id: event.room_id, last_seq: cursor });
      } else if (this.removeSub(session, event.room_id) && session.greeted) {
        session.send({ type: 'unsubscribed', room_id: event.room_id });
      }
    }
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
      this.unindexAll(session);
      if (session.calls.size === 0) session.closeUnauthorized('token revoked');
      else for (const controller of session.calls) controller.abort();
    }
  }

  /** The room's committed seq, known synchronously for a loaded room (0 for a new one). */
  private committedSeq(roomId: string): number {
    return this.app.rooms.loaded(roomId)?.committedSeq ?? 0;
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
