// Typed client for networked agents (package export `agent-chatroom/client`): one WebSocket to
// /ws that authenticates, reconnects with backoff, resumes every room without a gap or a
// duplicate, serves tool calls, and runs a turn handler when the server hands out a turn.
//
// Resume: the client remembers the last message seq it delivered per room. After every
// auth_ok it sends `subscribe {room_id, after_seq}` for each room; until the room's
// `subscribed` answer arrives, message_new frames of that room are dropped (the server
// replays them right after `subscribed`, in order), and later ones are deduped by seq.
import WebSocket from 'ws';
import type { RoomEvent, RoomEventName } from '../events/bus.js';
import type { AuthOkFrame, ServerFrame } from '../protocol/frames.js';
import { CLOSE } from '../protocol/frames.js';
import type { Participant } from '../types.js';
import { BACKOFF_DEFAULTS, backoffDelay, type BackoffOptions } from './backoff.js';
import { ChatroomError, restCall } from './rest.js';
import type { ToolArguments } from './tool-arguments.js';
import { TurnRunner, type AgentTurnData, type TurnHandler } from './turns.js';

export { ChatroomError, restCall } from './rest.js';
export { backoffDelay, type BackoffOptions } from './backoff.js';
export type { AgentTurnData, TurnAnswer, TurnContext, TurnHandler, TurnInfo } from './turns.js';
export { skipReason, SKIP_REASON_MAX } from './turns.js';
export type { ServerFrame } from '../protocol/frames.js';
export type { RoomEvent, RoomEventName } from '../events/bus.js';
export type { Message, Participant, Room } from '../types.js';
export type { ToolArguments } from './tool-arguments.js';

/** The name of a tool this client knows the arguments of. */
export type ToolName = keyof ToolArguments;
/**
 * A tool's arguments, from the registry's input schemas (src/client/tool-arguments.ts); a name
 * the client does not know (a newer server's tool) takes any object.
 */
export type ToolArgs<N extends string> = N extends ToolName ? ToolArguments[N] : Record<string, unknown>;
export interface CallOptions {
  /** How long to wait for the result (default: the client's callTimeoutMs). */
  timeoutMs?: number;
  signal?: AbortSignal;
}
/** `call`'s arguments after the name: required when the tool has a required argument. */
export type CallRest<N extends string> = {} extends ToolArgs<N> ? [args?: ToolArgs<N>, options?: CallOptions] : [args: ToolArgs<N>, options?: CallOptions];

export type ClientLogger = (level: 'debug' | 'info' | 'warn' | 'error', message: string, details?: unknown) => void;

export interface ChatroomClientOptions {
  /** `ws(s)://host:port/ws`, or the server's `http(s)://host:port` (then `/ws` is used). */
  url: string;
  token: string;
  /** Reconnect after a lost connection (default true). A refused token (4401) never reconnects. */
  reconnect?: boolean;
  backoff?: Partial<BackoffOptions>;
  /** How long a call may wait for its result, connection time included (default 30 s). */
  callTimeoutMs?: number;
  /** Silence (no frame, no ping) after which the connection counts as dead (default 75 s). */
  idleTimeoutMs?: number;
  /** Time kept before a turn's deadline; default 10 % of the turn, between 250 ms and 5 s. */
  turnMarginMs?: number;
  /** Skip reason shown in the room when the turn handler runs out of time. */
  turnTimeoutReason?: string;
  logger?: ClientLogger;
}

export type ConnectionStatus = 'connecting' | 'open' | 'reconnecting' | 'closed';

export interface EventMeta {
  room_id: string;
  event: string;
}

export type RoomEventData<E extends RoomEventName> = Extract<RoomEvent, { event: E }>['data'];

interface PendingCall {
  frame: string;
  sent: boolean;
  resolve: (data: unknown) => void;
  reject: (err: ChatroomError) => void;
  timer: NodeJS.Timeout;
  cleanup: () => void;
}

type AnyHandler = (data: any, meta: EventMeta) => void;

export class ChatroomClient {
  /** The authenticated participant (after the first auth_ok). */
  participant: Participant | null = null;
  status: ConnectionStatus = 'closed';

  private readonly url: string;
  private ws: WebSocket | null = null;
  private started = false;
  private stopped = false;
  private attempt = 0;
  private reconnectTimer: NodeJS.Timeout | undefined;
  private idleTimer: NodeJS.Timeout | undefined;
  private lastHeard = 0;
  private offsetMs = 0;
  private nextId = 1;
  private readonly pending = new Map<number, PendingCall>();
  private readonly seqs = new Map<string, number>();
  /** Rooms whose `subscribed` answer is still awaited after a (re)connect. */
  private readonly resyncing = new Set<string>();
  private readonly handlers = new Map<string, Set<AnyHandler>>();
  private readonly statusHandlers = new Set<(status: ConnectionStatus, error?: ChatroomError) => void>();
  private turns: TurnRunner | null = null;
  /**
   * Our latest agent_turn per room while no onTurn handler exists (the server sends it right
   * after auth_ok or a join, often before the caller got to register one): handed to the next
   * handler, so the turn is answered instead of timing out.
   */
  private readonly heldTurns = new Map<string, AgentTurnData>();
  private connecting: Promise<Participant> | null = null;
  private firstAuth: { resolve: (p: Participant) => void; reject: (e: ChatroomError) => void } | null = null;
  private readonly log: ClientLogger;

  constructor(private readonly options: ChatroomClientOptions) {
    this.url = toWsUrl(options.url);
    this.log = options.logger ?? (() => undefined);
  }

  /** Registers an agent over REST; returns its id and token (shown once: keep it). */
  static register(
    baseUrl: string,
    name: string,
    extra: { introduce?: string; capabilities?: string[]; skip_list?: string[] } = {},
  ): Promise<{ agent_id: string; token: string; agent: Record<string, unknown> }> {
    return restCall(baseUrl, 'register_agent', { name, ...extra });
  }

  /** Any tool over REST (before a socket exists, or from scripts). */
  static rest<T = unknown>(baseUrl: string, tool: string, args: unknown = {}, token?: string | null): Promise<T> {
    return restCall<T>(baseUrl, tool, args, token);
  }

  /**
   * Connects and authenticates; resolves with the participant on the first auth_ok. Retries
   * with backoff while the server cannot be reached; rejects with `unauthorized` when the token
   * is refused, or `closed` when close() is called first.
   */
  connect(): Promise<Participant> {
    if (this.stopped) return Promise.reject(new ChatroomError('closed', 'client closed'));
    if (this.participant && this.status === 'open') return Promise.resolve(this.participant);
    if (!this.connecting) {
      this.connecting = new Promise<Participant>((resolve, reject) => {
        this.firstAuth = { resolve, reject };
      });
      this.connecting.catch(() => undefined);
    }
    if (!this.started) {
      this.started = true;
      this.open();
    }
    return this.connecting;
  }

  /** Closes the connection for good: pending calls fail with `closed`, turns stop. */
  async close(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    clearTimeout(this.reconnectTimer);
    clearInterval(this.idleTimer);
    this.turns?.stop();
    this.failAll(new ChatroomError('closed', 'client closed'), true);
    this.firstAuth?.reject(new ChatroomError('closed', 'client closed'));
    this.firstAuth = null;
    const ws = this.ws;
    this.ws = null;
    this.setStatus('closed');
    if (ws && ws.readyState !== WebSocket.CLOSED) {
      await new Promise<void>((resolve) => {
        ws.once('close', () => resolve());
        if (ws.readyState === WebSocket.CONNECTING) ws.terminate();
        else ws.close(1000, 'client closing');
        setTimeout(() => {
          ws.terminate();
          resolve();
        }, 2000).unref();
      });
    }
  }

  /**
   * Calls a tool; resolves with its data (typed by `T`) or throws a ChatroomError with the
   * server's code. The arguments are type-checked against the tool's schema:
   * `call('join_room', { room_id: 1234 })` does not compile.
   */
  call<T = unknown, N extends ToolName | (string & {}) = ToolName>(tool: N, ...[args, options = {}]: CallRest<N>): Promise<T> {
    if (this.stopped) return Promise.reject(new ChatroomError('closed', 'client closed'));
    const id = this.nextId++;
    const frame = JSON.stringify({ type: 'call', id, tool, args: args ?? {} });
    return new Promise<T>((resolve, reject) => {
      const done = () => {
        clearTimeout(entry.timer);
        entry.cleanup();
        this.pending.delete(id);
      };
      const onAbort = () => {
        done();
        reject(new ChatroomError('aborted', `${tool} aborted`));
      };
      const entry: PendingCall = {
        frame,
        sent: false,
        resolve: (data) => {
          done();
          resolve(data as T);
        },
        reject: (err) => {
          done();
          reject(err);
        },
        timer: setTimeout(() => entry.reject(new ChatroomError('timeout', `${tool}: no answer in time`)), options.timeoutMs ?? this.options.callTimeoutMs ?? 30_000),
        cleanup: () => options.signal?.removeEventListener('abort', onAbort),
      };
      if (options.signal?.aborted) return onAbort();
      options.signal?.addEventListener('abort', onAbort, { once: true });
      this.pending.set(id, entry);
      if (this.status === 'open') this.sendCall(entry);
    });
  }

  /**
   * Shows what the agent is doing (SPEC §7 `set_activity`): `thinking`/`working` make its status
   * `busy` until `idle`, its next post or the end of its turn. Best effort: resolves false when the
   * server refused (e.g. a server without the tool), never throws.
   */
  async setActivity(roomId: string, activity: 'thinking' | 'working' | 'idle', note?: string): Promise<boolean> {
    const cut = note === undefined ? undefined : [...note.replace(/\s+/g, ' ').trim()].slice(0, 100).join('');
    try {
      await this.call('set_activity', { room_id: roomId, activity, ...(cut ? { note: cut } : {}) }, { timeoutMs: 5000 });
      return true;
    } catch (err) {
      this.log('debug', 'set_activity failed', { room_id: roomId, code: (err as ChatroomError).code });
      return false;
    }
  }

  /** Room events; `'*'` receives every event, unknown types included. Returns an unsubscribe. */
  on<E extends RoomEventName>(event: E, handler: (data: RoomEventData<E>, meta: EventMeta) => void): () => void;
  on(event: '*' | (string & {}), handler: (data: unknown, meta: EventMeta) => void): () => void;
  on(event: string, handler: AnyHandler): () => void {
    let set = this.handlers.get(event);
    if (!set) this.handlers.set(event, (set = new Set()));
    set.add(handler);
    return () => set.delete(handler);
  }

  /** Connection status changes ('open' after every auth_ok, 'closed' with the reason). */
  onStatus(handler: (status: ConnectionStatus, error?: ChatroomError) => void): () => void {
    this.statusHandlers.add(handler);
    return () => this.statusHandlers.delete(handler);
  }

  /**
   * Runs `handler` for every turn the server gives this participant: it gets the room, can_skip,
   * deadline, reason and get_context, and returns `{text, mentions?, end_turn?}`, `{skip: true}`
   * or nothing. It is cut off before the deadline (then the turn is skipped when allowed).
   */
  onTurn(handler: TurnHandler): () => void {
    this.turns?.stop();
    const runner = new TurnRunner(
      {
        // The runner sends skip_response and send_message, whose arguments it builds itself.
        call: (tool, args, opts) => this.call(tool, args as ToolArgs<string>, opts),
        clockOffsetMs: () => this.offsetMs,
        log: this.log,
      },
      handler,
      {
        ...(this.options.turnMarginMs !== undefined ? { marginMs: this.options.turnMarginMs } : {}),
        ...(this.options.turnTimeoutReason ? { timeoutReason: this.options.turnTimeoutReason } : {}),
      },
    );
    this.turns = runner;
    for (const [roomId, data] of this.heldTurns) {
      if (Date.parse(data.deadline) - this.offsetMs > Date.now()) runner.onAgentTurn(roomId, data);
    }
    this.heldTurns.clear();
    return () => {
      runner.stop();
      if (this.turns === runner) this.turns = null;
    };
  }

  /** Highest message seq delivered to handlers for a room (undefined: not a room of ours). */
  lastSeq(roomId: string): number | undefined {
    return this.seqs.get(roomId);
  }

  rooms(): string[] {
    return [...this.seqs.keys()];
  }

  // ── connection ──

  private open(): void {
    if (this.stopped) return;
    this.setStatus(this.attempt === 0 && !this.participant ? 'connecting' : 'reconnecting');
    const ws = new WebSocket(this.url, { handshakeTimeout: 10_000, perMessageDeflate: false });
    this.ws = ws;
    ws.on('open', () => {
      this.heard();
      ws.send(JSON.stringify({ type: 'auth', token: this.options.token }));
    });
    ws.on('message', (data) => {
      if (ws !== this.ws) return;
      this.heard();
      let frame: unknown;
      try {
        frame = JSON.parse(data.toString());
      } catch {
        this.log('warn', 'server sent a frame that is not JSON');
        return;
      }
      if (typeof frame !== 'object' || frame === null || typeof (frame as { type?: unknown }).type !== 'string') {
        this.log('warn', 'server sent a frame without a type');
        return;
      }
      try {
        this.onFrame(frame as ServerFrame);
      } catch (err) {
        // A frame of a newer server (or a broken one) must not take the agent down.
        this.log('warn', 'could not handle a server frame', { err: String(err) });
      }
    });
    ws.on('ping', () => this.heard());
    ws.on('error', (err) => this.log('debug', 'websocket error', { message: err.message }));
    ws.on('close', (code, reason) => this.onSocketClose(ws, code, reason.toString()));
  }

  private onSocketClose(ws: WebSocket, code: number, reason: string): void {
    if (ws !== this.ws) return;
    this.ws = null;
    clearInterval(this.idleTimer);
    this.failAll(new ChatroomError('connection_lost', `connection lost (${code})`), false);
    if (this.stopped) return;
    if (code === CLOSE.UNAUTHORIZED.code) {
      const error = new ChatroomError('unauthorized', `token refused: ${reason || 'unauthorized'}`);
      this.stopped = true;
      this.turns?.stop();
      this.failAll(error, true);
      this.firstAuth?.reject(error);
      this.firstAuth = null;
      this.setStatus('closed', error);
      return;
    }
    if (this.options.reconnect === false) {
      const error = new ChatroomError('connection_lost', `connection closed (${code})`);
      this.stopped = true;
      this.failAll(error, true);
      this.firstAuth?.reject(error);
      this.firstAuth = null;
      this.setStatus('closed', error);
      return;
    }
    const delay = backoffDelay(this.attempt++, { ...BACKOFF_DEFAULTS, ...this.options.backoff });
    this.log('info', 'connection lost, reconnecting', { code, reason, delay_ms: delay });
    this.setStatus('reconnecting');
    this.reconnectTimer = setTimeout(() => this.open(), delay);
  }

  private heard(): void {
    this.lastHeard = Date.now();
  }

  private watchIdle(ws: WebSocket): void {
    clearInterval(this.idleTimer);
    const limit = this.options.idleTimeoutMs ?? 75_000;
    this.idleTimer = setInterval(() => {
      if (Date.now() - this.lastHeard > limit && ws === this.ws) {
        this.log('warn', 'server silent, reconnecting');
        ws.terminate();
      }
    }, Math.max(100, Math.min(limit / 3, 15_000)));
    this.idleTimer.unref();
  }

  // ── frames ──

  private onFrame(frame: ServerFrame): void {
    switch (frame.type) {
      case 'auth_ok':
        return this.onAuthOk(frame);
      case 'subscribed':
        if (frame.after_seq !== undefined) this.resyncing.delete(frame.room_id);
        else if (!this.seqs.has(frame.room_id)) this.seqs.set(frame.room_id, frame.last_seq);
        return;
      case 'unsubscribed':
        this.seqs.delete(frame.room_id);
        this.heldTurns.delete(frame.room_id);
        this.resyncing.delete(frame.room_id);
        return;
      case 'result': {
        const entry = typeof frame.id === 'number' ? this.pending.get(frame.id) : undefined;
        if (!entry) return;
        if (frame.ok) entry.resolve(frame.data);
        else entry.reject(ChatroomError.from(frame.error));
        return;
      }
      case 'pong':
        this.offsetMs = Date.parse(frame.server_time) - Date.now();
        return;
      case 'error':
        this.log('warn', 'server refused a frame', frame);
        if (frame.room_id) {
          this.resyncing.delete(frame.room_id);
          if (frame.error.code === 'not_a_member' || frame.error.code === 'room_not_found') this.seqs.delete(frame.room_id);
        }
        return;
      case 'event':
        return this.onEvent(frame);
      default:
        // Frame types this client does not know are ignored.
        return;
    }
  }

  private onAuthOk(frame: AuthOkFrame): void {
    this.attempt = 0;
    this.participant = frame.participant;
    this.offsetMs = Date.parse(frame.server_time) - Date.now();
    const ws = this.ws!;
    this.watchIdle(ws);
    const current = new Set(frame.rooms.map((r) => r.room_id));
    for (const roomId of [...this.seqs.keys()]) if (!current.has(roomId)) this.seqs.delete(roomId);
    this.resyncing.clear();
    for (const { room_id, last_seq } of frame.rooms) {
      const after = this.seqs.get(room_id) ?? last_seq;
      this.seqs.set(room_id, after);
      this.resyncing.add(room_id);
      // Also brings back our agent_turn if we hold a turn there.
      ws.send(JSON.stringify({ type: 'subscribe', room_id, after_seq: after }));
    }
    this.setStatus('open');
    for (const entry of this.pending.values()) if (!entry.sent) this.sendCall(entry);
    this.firstAuth?.resolve(frame.participant);
    this.firstAuth = null;
  }

  private onEvent(frame: Extract<ServerFrame, { type: 'event' }>): void {
    const roomId = frame.room_id;
    if (frame.event === 'message_new') {
      const seq = frame.data.message.seq;
      if (this.resyncing.has(roomId)) return; // replayed right after `subscribed`
      const last = this.seqs.get(roomId) ?? 0;
      if (seq <= last) return;
      this.seqs.set(roomId, seq);
    }
    const meta: EventMeta = { room_id: roomId, event: frame.event };
    for (const key of [frame.event, '*']) {
      for (const handler of this.handlers.get(key) ?? []) {
        try {
          handler(frame.data, meta);
        } catch (err) {
          this.log('error', 'event handler threw', { event: frame.event, err: String(err) });
        }
      }
    }
    if (frame.event === 'agent_turn' && this.participant && frame.data.agent_id === this.participant.id) {
      if (this.turns) this.turns.onAgentTurn(roomId, frame.data);
      else this.heldTurns.set(roomId, frame.data);
    } else if (frame.event === 'agent_turn' || frame.event === 'round_end') {
      this.heldTurns.delete(roomId); // the turn we held has moved on
    }
  }

  private sendCall(entry: PendingCall): void {
    if (!this.ws || this.ws.readyState !== WebSocket.OPEN) return;
    entry.sent = true;
    this.ws.send(entry.frame);
  }

  /** Fails calls already on the wire (their answer is lost); with `all`, queued ones too. */
  private failAll(error: ChatroomError, all: boolean): void {
    for (const entry of [...this.pending.values()]) {
      if (all || entry.sent) entry.reject(error);
    }
  }

  private setStatus(status: ConnectionStatus, error?: ChatroomError): void {
    if (this.status === status && !error) return;
    this.status = status;
    for (const handler of this.statusHandlers) {
      try {
        handler(status, error);
      } catch {
        // a status listener must not break the connection
      }
    }
  }
}

/** Accepts ws(s)://…/ws as is; turns http(s)://host:port[/] into ws(s)://host:port/ws. */
export function toWsUrl(url: string): string {
  const parsed = new URL(url);
  if (parsed.protocol === 'http:') parsed.protocol = 'ws:';
  else if (parsed.protocol === 'https:') parsed.protocol = 'wss:';
  if (parsed.pathname === '/' || parsed.pathname === '') parsed.pathname = '/ws';
  return parsed.toString();
}
