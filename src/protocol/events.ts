// Room events (SPEC §8) and the turn context: the one definition shared by the server (runtime,
// WebSocket hub, MCP) and the typed client. Types plus the pure builders of `agent_turn` and
// `your_turn`, so the frame is built in exactly one place.
import type { Member, Message, RoomRecord, RoomUpdateRoom } from '../types.js';
import type { EngineEffect, RoundEndReason, RoundKind, TurnReason } from '../rounds/types.js';

export type Activity = 'thinking' | 'working' | 'idle';

export interface MemberStatus {
  name: string;
  status: Member['status'] | 'busy';
  last_active: string;
  /** set_activity (SPEC §7): null when the agent reported none (or `idle`). */
  activity: Activity | null;
  note: string | null;
}

/** `agent_turn` (SPEC §8): the engine's turn effect plus the agent's id. */
export type AgentTurnData = Omit<Extract<EngineEffect, { type: 'agent_turn' }>, 'type'> & { agent_id: string };

export type RoomEvent =
  | { event: 'message_new'; room_id: string; data: { message: Message } }
  | { event: 'message_update'; room_id: string; data: { message: Message } }
  | { event: 'member_join'; room_id: string; data: { member: Member } }
  | { event: 'member_leave'; room_id: string; data: { member: Member } }
  | { event: 'member_status_change'; room_id: string; data: { member: MemberStatus } }
  | {
      event: 'round_start';
      room_id: string;
      data: { round_id: string; agent_queue: string[]; mode: 'default' | 'host'; kind: RoundKind };
    }
  | { event: 'round_end'; room_id: string; data: { round_id: string; reason: RoundEndReason } }
  | { event: 'agent_turn'; room_id: string; data: AgentTurnData }
  | { event: 'room_update'; room_id: string; data: { room: RoomUpdateRoom } };

export type RoomEventName = RoomEvent['event'];

/** Membership changes that transports must act on at once (subscribe or drop sockets). */
export type AccessEvent =
  | { type: 'joined'; room_id: string; participant_id: string }
  | { type: 'left'; room_id: string; participant_id: string }
  | { type: 'token_revoked'; participant_id: string };

/** The caller's turn as tools report it (`your_turn`), or null. */
export interface YourTurn {
  room_id: string;
  round_id: string;
  can_skip: boolean;
  reason: TurnReason;
  deadline: string | null;
}

/** `your_turn` for `name` in the room: null unless it holds the turn of a running round in an active room. */
export function yourTurn(room: RoomRecord, name: string): YourTurn | null {
  const round = room.current_round;
  const turn = round && !round.completed ? round.turn : null;
  if (!round || !turn || turn.agent !== name || room.system_status === 'paused') return null;
  return { room_id: room.room_id, round_id: round.round_id, can_skip: turn.can_skip, reason: turn.reason, deadline: turn.deadline };
}

/**
 * The `agent_turn` of the room's current holder, or null when nobody holds an armed turn. Every
 * agent_turn the server sends (issued, re-issued, re-sent on subscribe or auth) comes from here.
 */
export function agentTurnData(room: RoomRecord, defaultTimeoutMs: number): AgentTurnData | null {
  const round = room.current_round;
  const turn = round && !round.completed ? round.turn : null;
  if (!round || !turn || turn.deadline === null || room.system_status === 'paused') return null;
  const member = room.members.find((m) => m.name === turn.agent);
  return {
    round_id: round.round_id,
    agent_id: member?.participant_id ?? '',
    agent_name: turn.agent,
    can_skip: turn.can_skip,
    reason: turn.reason,
    deadline: turn.deadline,
    timeout_ms: room.settings.turn_timeout_ms ?? defaultTimeoutMs,
    agent_queue: [...round.agent_queue],
    current_agent_index: round.current_agent_index,
    pending_mentions: [...round.pending_mentions],
  };
}
