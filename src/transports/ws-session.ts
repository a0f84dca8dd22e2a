// One authenticated (or authenticating) socket of the hub: what it is subscribed to, what it
// was sent, and the write path with its two safety valves (slow consumer, replay queue).
import type { Duplex } from 'node:stream';
import type { WebSocket } from 'ws';
import type { Caller } from '../types.js';
import type { RawData } from 'ws';
import { CLOSE, type ServerFrame } from '../protocol/frames.js';
import type { EventWire } from './ws-wire.js';

/** A serialised frame (replies, notices, replayed history), written through `ws`. */
export type Frame = string | Buffer;

const TEXT = { binary: false } as const;

/** A live event waiting while a room's replay is still being written. */
interface QueuedFrame {
  frame: EventWire;
  /** seq of a message_new, 0 for other events. */
  seq: number;
}

export interface RoomSub {
  /** Highest message seq written to this socket for the room (dedupes the replay seam). */
  lastSent: number;
  /** Non-null while a replay runs: live events of the room wait here, in commit order. */
  queue: QueuedFrame[] | null;
}

export interface SessionLimits {
  /** A socket whose unsent bytes pass this is dropped (it must not slow the others). */
  maxBufferedBytes: number;
  /** Live events a socket may have waiting behind a replay before it is dropped. */
  maxQueuedEvents: number;
}

export type SessionState = 'awaiting_auth' | 'open' | 'revoked' | 'closed';

let nextSessionId = 1;

/** Counts the ticks in which room events were written (see sendEvent). */
let eventTick = 0;
let eventTickEnding = false;
/** Sessions corked in this tick (coalesceWrites), in the order they were first corked. */
let corkedThisTick: Session[] = [];

/** Called once when a tick writes its first room event: the tick's end is then marked. */
function eventTickStarted(): void {
  if (eventTickEnding) return;
  eventTickEnding = true;
  process.nextTick(endEventTick);
}

/** The end of a tick that wrote room events: the next event starts a new tick; corked sockets are written. */
function endEventTick(): void {
  eventTick++;
  eventTickEnding = false;
  const sessions = corkedThisTick;
  corkedThisTick = [];
  for (const session of sessions) {
    try {
      session.uncork();
    } catch (err) {
      // As uncaught as it was in its own callback, without leaving the other sockets corked.
      queueMicrotask(() => {
        throw err;
      });
    }
  }
}

export class Session {
  readonly id = nextSessionId++;
  state: SessionState = 'awaiting_auth';
  caller: Caller | null = null;
  /**
   * `auth_ok` has been sent. Until then the socket's rooms are being subscribed: their events
   * wait in the subscriptions' queues and access changes send no frame, so `auth_ok` is always
   * the answer to `auth` and lists every room the socket is subscribed to (SPEC §8).
   */
  greeted = false;
  /**
   * Frames that came after `auth` and before `auth_ok` (a client may send `subscribe` or a call
   * right behind its `auth`): kept in order and handled once `auth_ok` is out, so their answers,
   * and a replay they start, follow it. Null when not collecting.
   */
  early: { data: RawData; isBinary: boolean }[] | null = null;
  /** Cleared by the heartbeat, set by pong or any frame. */
  alive = true;
  authTimer: NodeJS.Timeout | undefined;
  readonly subs = new Map<string, RoomSub>();
  /** In-flight calls, aborted when the socket closes or its token is revoked. */
  readonly calls = new Set<{ abort(): void }>();
  /** Why the hub dropped the socket, for the log (slow consumer, heartbeat). */
  dropped: string | null = null;
  /** Calls refused with rate_limited in a row; too many closes the socket (1008). */
  rateLimitStrikes = 0;
  /** The TCP socket is corked until the end of the current tick (see coalesceWrites). */
  private corked = false;
  /** The tick (eventTick) of the last room event written to this socket. */
  private lastEventTick = -1;

  /** The upgrade request's Accept-Language header: the language of this socket's error messages (SPEC §7). */
  acceptLanguage: string | null = null;

  constructor(
    readonly ws: WebSocket,
    private readonly limits: SessionLimits,
    /** Client address, for per-address rate limits. */
    readonly address: string | null,
    /** The upgraded TCP (or TLS) socket under `ws`: room events are corked and written to it directly. */
    private readonly socket: Duplex,
  ) {}

  get isOpen(): boolean {
    return (this.state === 'open' || this.state === 'revoked' || this.state === 'awaiting_auth') && this.ws.readyState === 1;
  }

  /**
   * Writes one frame (a reply, a notice) at once; the socket is dropped when it has fallen too
   * far behind. While room events of this tick are corked, that check waits for the flush.
   */
  sendRaw(frame: Frame): void {
    if (!this.isOpen) return;
    this.ws.send(frame, TEXT);
    if (!this.corked) this.dropIfBehind();
  }

  /**
   * Writes one room event: the socket's first of a tick at once, later ones of the tick
   * coalesced (see coalesceWrites).
   * The frame was built once for all recipients and goes straight to the TCP socket: `ws` writes
   * every frame synchronously (the hub neither compresses nor sends blobs, so its sender never
   * queues), so frames cannot interleave, and `ws.bufferedAmount` still counts these bytes.
   */
  private sendEvent(wire: EventWire): void {
    if (!this.isOpen) return;
    if (this.lastEventTick !== eventTick) {
      // The socket's first event of this tick is written at once: most ticks carry one event
      // (a room gets a message at a time), and corking it only to uncork it at the end of the
      // tick cost a buffered write and an uncork per socket. Further events of the tick (a
      // group commit publishes several) are corked and leave together (coalesceWrites).
      this.lastEventTick = eventTick;
      eventTickStarted();
      this.socket.write(wire.frame);
      this.dropIfBehind();
      return;
    }
    this.coalesceWrites();
    this.socket.write(wire.frame);
  }

  send(frame: ServerFrame): void {
    this.sendRaw(JSON.stringify(frame));
  }

  /** Writes a frame and resolves once it left for the network (flow control for replays). */
  sendAndWait(frame: Frame): Promise<void> {
    return new Promise((resolve) => {
      if (!this.isOpen) return resolve();
      this.ws.send(frame, TEXT, () => resolve());
    });
  }

  /** A live event of a subscribed room: queued behind a running replay, deduped by seq. */
  deliver(roomId: string, frame: EventWire, seq: number): void {
    const sub = this.subs.get(roomId);
    if (!sub) return;
    if (sub.queue) {
      if (sub.queue.length >= this.limits.maxQueuedEvents) this.drop('slow consumer (replay queue full)');
      else sub.queue.push({ frame, seq });
      return;
    }
    this.write(sub, frame, seq);
  }

  /** Ends a replay: writes what waited, then the room is live again. */
  flush(sub: RoomSub): void {
    const queued = sub.queue ?? [];
    sub.queue = null;
    for (const { frame, seq } of queued) this.write(sub, frame, seq);
  }

  close(close: { code: number; reason: string }, detail?: string): void {
    if (this.ws.readyState === 0 || this.ws.readyState === 1) {
      this.ws.close(close.code, detail ? `${close.reason}: ${detail}`.slice(0, 120) : close.reason);
    }
  }

  closeUnauthorized(detail: string): void {
    this.close(CLOSE.UNAUTHORIZED, detail);
  }

  /** Cuts the connection without a closing handshake (the peer is not reading). */
  drop(why: string): void {
    if (this.dropped === null) this.dropped = why;
    this.ws.terminate();
  }

  /**
   * Room events written to this socket in the same tick after its first leave in one write. A
   * group commit answers several messages at once and their events are published together:
   * without this, N messages to 1,000 sockets were N × 1,000 write syscalls in one go, blocking
   * the event loop for hundreds of milliseconds; now they are at most 2,000. (Node counts
   * corks, so ws's own cork/uncork around each frame nests inside this one.) Replies are not
   * corked: a client that floods calls gets its answers as they are made, as before.
   */
  private coalesceWrites(): void {
    if (this.corked) return;
    this.corked = true;
    this.socket.cork();
    // One callback at the end of the tick (endEventTick) uncorks every socket corked in it (a
    // fan-out to 100 sockets queued 100 callbacks before).
    corkedThisTick.push(this);
  }

  /** The end of the tick: this tick's frames leave in one write. */
  uncork(): void {
    this.corked = false;
    this.socket.uncork();
    // Judged once the tick's frames went to the kernel: what is still buffered now is the
    // reader's backlog, not a burst of this tick waiting behind the cork.
    this.dropIfBehind();
  }

  /** A socket whose unsent bytes pass the limit must not slow the others: it is cut. */
  private dropIfBehind(): void {
    if (this.isOpen && this.ws.bufferedAmount > this.limits.maxBufferedBytes) this.drop('slow consumer');
  }

  private write(sub: RoomSub, frame: EventWire, seq: number): void {
    if (seq > 0) {
      if (seq <= sub.lastSent) return;
      sub.lastSent = seq;
    }
    this.sendEvent(frame);
  }
}
