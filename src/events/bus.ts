// Room events (SPEC §8). Services publish after the change is durable; transports subscribe.
// In-process for now; the interface leaves room for a Redis-backed bus later.
import type { Member, Message, Room } from '../types.js';
import type { RoundEndReason, RoundKind, TurnReason } from '../rounds/types.js';

export type RoomEvent =
  | { event: 'message_new'; room_id: string; data: { message: Message } }
  | { event: 'message_update'; room_id: string; data: { message: Message } }
  | { event: 'member_join'; room_id: string; data: { member: Member } }
  | { event: 'member_leave'; room_id: string; data: { member: Member } }
  | {
      event: 'member_status_change';
      room_id: string;
      data: { member: Pick<Member, 'name' | 'status' | 'last_active'> };
    }
  | {
      event: 'round_start';
      room_id: string;
      data: { round_id: string; agent_queue: string[]; mode: 'default' | 'host'; kind: RoundKind };
    }
  | { event: 'round_end'; room_id: string; data: { round_id: string; reason: RoundEndReason } }
  | {
      event: 'agent_turn';
      room_id: string;
      data: {
        round_id: string;
        agent_id: string;
        agent_name: string;
        can_skip: boolean;
        reason: TurnReason;
        deadline: string;
        timeout_ms: number;
      };
    }
  | { event: 'room_update'; room_id: string; data: { room: Room } };

export type RoomEventName = RoomEvent['event'];

export type RoomEventListener = (event: RoomEvent) => void;

/** Membership changes that transports must act on at once (subscribe or drop sockets). */
export type AccessEvent =
  | { type: 'joined'; room_id: string; participant_id: string }
  | { type: 'left'; room_id: string; participant_id: string }
  | { type: 'token_revoked'; participant_id: string };

export interface EventBus {
  publish(event: RoomEvent): void;
  subscribe(listener: RoomEventListener): () => void;
  publishAccess(event: AccessEvent): void;
  subscribeAccess(listener: (event: AccessEvent) => void): () => void;
}

/** Synchronous in-process bus: listeners run in publish order, so per-room order is commit order. */
export class InProcessBus implements EventBus {
  private readonly listeners = new Set<RoomEventListener>();
  private readonly accessListeners = new Set<(event: AccessEvent) => void>();

  publish(event: RoomEvent): void {
    for (const listener of this.listeners) {
      try {
        listener(event);
      } catch {
        // A failing listener must not stop delivery to the others.
      }
    }
  }

  subscribe(listener: RoomEventListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  publishAccess(event: AccessEvent): void {
    for (const listener of this.accessListeners) {
      try {
        listener(event);
      } catch {
        // see publish
      }
    }
  }

  subscribeAccess(listener: (event: AccessEvent) => void): () => void {
    this.accessListeners.add(listener);
    return () => this.accessListeners.delete(listener);
  }
}
