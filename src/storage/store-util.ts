// Small pieces every Store implementation shares.
import type { Message, PublicRoomSummary, RoomRecord } from '../types.js';
import type { ParticipantRecord } from './store.js';

export function participantIdOf(p: ParticipantRecord): string {
  return p.kind === 'agent' ? p.record.agent_id : p.record.user_id;
}

/**
 * Whether a stored participant record is the one given (putParticipant's compare-and-set):
 * records are plain JSON written by this server, so equal JSON texts mean equal records.
 */
export function sameRecord(stored: ParticipantRecord | undefined, given: ParticipantRecord): boolean {
  return stored !== undefined && stored.kind === given.kind && JSON.stringify(stored.record) === JSON.stringify(given.record);
}

/** The public fields of a room (SPEC §3: what anyone may see in the room list). */
export function summarise(room: RoomRecord): PublicRoomSummary {
  return {
    room_id: room.room_id,
    room_name: room.room_name,
    room_description: room.room_description,
    interaction_mode: room.interaction_mode,
    member_count: room.members.length,
    has_password: room.password_hash !== null,
    archived: room.archived,
  };
}

/**
 * Checks a commit's messages against the room's log: new messages continue the seqs without a
 * gap (lastSeq+1, +2, …), updates name an existing message at its own seq. Throws before anything
 * is written, so a buggy caller cannot corrupt a log.
 */
export function checkCommitSeqs(
  roomId: string,
  lastSeq: number,
  idAt: (seq: number) => string | undefined,
  messages: readonly Message[],
): void {
  let next = lastSeq + 1;
  const added = new Map<number, string>();
  for (const m of messages) {
    if (m.room_id !== roomId) throw new Error(`message ${m.message_id} belongs to room ${m.room_id}, not ${roomId}`);
    if (m.seq === next) {
      added.set(m.seq, m.message_id);
      next++;
    } else if (!(m.seq >= 1 && m.seq < next && (added.get(m.seq) ?? idAt(m.seq)) === m.message_id)) {
      throw new Error(`message ${m.message_id} has seq ${m.seq}; the next new seq is ${next}`);
    }
  }
}
