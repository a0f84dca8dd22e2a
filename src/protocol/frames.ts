// The WebSocket wire protocol of /ws (SPEC §8): close codes and frame types, shared by the hub
// and the typed client. Types and constants only, so the client pulls in nothing of the server.
import type { WireError } from '../errors.js';
import type { RoomEvent, RoomEventName } from './events.js';
import type { Participant } from '../types.js';

/** Close codes the hub sends, each with the reason text it uses. */
export const CLOSE = {
  /** Server shutdown (SIGTERM, close()). */
  GOING_AWAY: { code: 1001, reason: 'server shutting down' },
  /** A frame over MAX_FRAME_BYTES (sent by `ws` itself through `maxPayload`). */
  MESSAGE_TOO_BIG: { code: 1009, reason: 'frame too large' },
  /** Too many sockets for one participant, or calls that keep coming after rate_limited. */
  POLICY_VIOLATION: { code: 1008, reason: 'policy violation' },
  /** Missing, late, unknown, rotated or revoked token. */
  UNAUTHORIZED: { code: 4401, reason: 'unauthorized' },
} as const;

export type CloseCode = (typeof CLOSE)[keyof typeof CLOSE]['code'];

// ── client → server ──

export interface AuthFrame {
  type: 'auth';
  token: string;
}
export interface SubscribeFrame {
  type: 'subscribe';
  room_id: string;
  /** Replay `message_new` for every message with a higher seq before live delivery resumes. */
  after_seq?: number;
}
export interface UnsubscribeFrame {
  type: 'unsubscribe';
  room_id: string;
}
export interface CallFrame {
  type: 'call';
  id: string | number;
  tool: string;
  args?: unknown;
}
export interface PingFrame {
  type: 'ping';
}
export type ClientFrame = AuthFrame | SubscribeFrame | UnsubscribeFrame | CallFrame | PingFrame;

// ── server → client ──

/** A room the socket receives, with the highest seq already published when it was subscribed. */
export interface RoomCursor {
  room_id: string;
  last_seq: number;
}

export interface AuthOkFrame {
  type: 'auth_ok';
  participant: Participant;
  /** Every room of the participant: the socket is already subscribed to each. */
  rooms: RoomCursor[];
  /** Server clock (ISO 8601 UTC), so clients can read deadlines against it. */
  server_time: string;
}

/**
 * Sent when a subscription starts: in answer to `subscribe` (before the replay, which then
 * carries every message in (after_seq, last_seq]) and when a room the participant joined is
 * subscribed on its own (no after_seq).
 */
export interface SubscribedFrame {
  type: 'subscribed';
  room_id: string;
  last_seq: number;
  after_seq?: number;
}

export interface UnsubscribedFrame {
  type: 'unsubscribed';
  room_id: string;
}

export type ResultFrame =
  | { type: 'result'; id: string | number; ok: true; data: unknown }
  | { type: 'result'; id: string | number; ok: false; error: WireError };

export interface PongFrame {
  type: 'pong';
  server_time: string;
}

/** A bad frame (or a refused subscribe, which names its room). The socket stays open. */
export interface ErrorFrame {
  type: 'error';
  error: WireError;
  room_id?: string;
}

export type EventFrame = { [E in RoomEvent as E['event']]: { type: 'event'; event: E['event']; room_id: string; data: E['data'] } }[RoomEventName];

export type ServerFrame = AuthOkFrame | SubscribedFrame | UnsubscribedFrame | ResultFrame | PongFrame | ErrorFrame | EventFrame;
