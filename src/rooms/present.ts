// What leaves the server: stored records without their secrets and internal bookkeeping.
import { cloneRoom } from '../clone.js';
import type { Message, PublicRoomSummary, Room, RoomRecord, RoomUpdateRoom } from '../types.js';

export function presentRoom(record: RoomRecord): Room {
  const { password_hash, created_by_id: _createdById, processed_through_seq: _processed, recent_round_ends: _ends, paused_by: _pausedBy, ...rest } = record;
  const room = cloneRoom({ ...rest, has_password: password_hash !== null });
  // A room's members carry exactly SPEC §4's fields; an agent's capabilities are kept with its
  // membership for get_context's members (runtime/reads.ts), which shows them.
  for (let i = 0; i < room.members.length; i++) {
    const member = room.members[i]!;
    if (member.capabilities === undefined) continue;
    const { capabilities: _capabilities, ...plain } = member;
    room.members[i] = plain;
  }
  return room;
}

/**
 * The room as a `room_update` event carries it: everything but `history_rounds`. That list holds
 * one id per round ever played, so in an old room it was most of the event, and every round
 * sends a room_update to every subscriber: the event's cost grew with the room's age. SPEC §8
 * names what the event is for (status, announcement, mode, settings, members, host flags, the
 * running round); `get_room` still answers the whole room, and each `round_end` names the round
 * that joins the list (docs/websocket.md).
 */
export function presentRoomUpdate(record: RoomRecord): RoomUpdateRoom {
  const { history_rounds: _history, ...room } = presentRoom({ ...record, history_rounds: [] });
  return room;
}

export function presentRoomSummary(record: RoomRecord): PublicRoomSummary {
  return {
    room_id: record.room_id,
    room_name: record.room_name,
    room_description: record.room_description,
    interaction_mode: record.interaction_mode,
    member_count: record.members.length,
    has_password: record.password_hash !== null,
    archived: record.archived,
  };
}

/** `processed` is reported from the room's processed_through_seq (log lines are never rewritten for it). */
export function presentMessage(message: Message, room: Pick<RoomRecord, 'processed_through_seq'>): Message {
  const { client_msg_id: _clientMsgId, ...rest } = message;
  return { ...rest, processed: message.seq <= room.processed_through_seq };
}
