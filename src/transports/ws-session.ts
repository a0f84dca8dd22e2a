// One authenticated (or authenticating) socket of the hub: what it is subscribed to, what it
// was sent, and the write path with its two safety valves (slow consumer, replay queue).
import type { WebSocket } from 'ws';
import type { Caller } from '../types.js';
import { CLOSE, type ServerFrame } from './ws-protocol.js';

/** Live frames waiting while a room's replay is still being written. */
/** A serialised frame: a UTF-8 Buffer when shared by many sockets (encoded once). */
export type Frame = string | Buffer;

const TEXT = { binary: false } as const;

interface QueuedFrame {
  frame: Frame;
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

export class Session {
  readonly id = nextSessionId++;
  state: SessionState = 'awaiting_auth';
  caller: Caller | null = null;
  /** Cleared by the heartbeat, set by pong or any frame. */
  alive = true;
  authTimer: NodeJS.Timeout | undefined;
  readonly subs = new Map<string, RoomSub>();
  /** In-flight calls, aborted when the socket closes or its token is revoked. */
  readonly calls = new Set<AbortController>();
  /** Why the hub dropped the socket, for the log (slow consumer, heartbeat). */
  dropped: string | null = null;
  /** Calls refused with rate_limited in a row; too many closes the socket (1008). */
  rateLimitStrikes = 0;

  constructor(
    readonly ws: WebSocket,
    private readonly limits: SessionLimits,
    /** Client address, for per-address rate limits. */
    readonly address: string | null = null,
  ) {}

  get isOpen(): boolean {
    return (this.state === 'open' || this.state === 'revoked' || this.state === 'awaiting_auth') && this.ws.readyState === 1;
  }

  /** Writes one frame; drops the socket when it has fallen too far behind. */
  sendRaw(frame: Frame): boolean {
    if (!this.isOpen) return false;
    this.ws.send(frame, TEXT);
    if (this.ws.bufferedAmount > this.limits.maxBufferedBytes) {
      this.drop('slow consumer');
      return false;
    }
    return true;
  }

  send(frame: ServerFrame): boolean {
    return this.sendRaw(JSON.stringify(frame));
  }

  /** Writes a frame and resolves once it left for the network (flow control for replays). */
  sendAndWait(frame: Frame): Promise<void> {
    return new Promise((resolve) => {
      if (!this.isOpen) return resolve();
      this.ws.send(frame, TEXT, () => resolve());
    });
  }

  /** A live event of a subscribed room: queued behind a running replay, deduped by seq. */
  deliver(roomId: string, frame: Frame, seq: number): void {
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

  private write(sub: RoomSub, frame: Frame, seq: number): void {
    if (seq > 0) {
      if (seq <= sub.lastSent) return;
      sub.lastSent = seq;
    }
    this.sendRaw(frame);
  }
}
