// The messages the driver writes for the engine's `record` and `system_message` effects. Pure
// (id and time come in) so the property test can check every record the engine emits exactly
// as it will be stored: invisible, from the agent, with its skip reason.
import type { Member, Message, RoomRecord } from '../types.js';
import type { EngineEffect } from './types.js';

export type WrittenEffect = Extract<EngineEffect, { type: 'record' | 'system_message' }>;

/** What the builder reads about the room. */
export type MessageRoom = Pick<RoomRecord, 'room_id' | 'language' | 'timezone'> & {
  members: readonly Pick<Member, 'name' | 'participant_id'>[];
};

export interface MessageStamp {
  message_id: string;
  seq: number;
  /** ISO 8601 UTC. */
  timestamp: string;
}

/**
 * A record is an invisible `ai_agent` message in the agent's name (SPEC §6: skips, timeouts,
 * offline and passed turns leave a trace in the log but not in the conversation); a system
 * message (the guard tripped) is visible.
 */
export function engineMessage(room: MessageRoom, effect: WrittenEffect, stamp: MessageStamp): Message {
  const isRecord = effect.type === 'record';
  const member = isRecord ? room.members.find((m) => m.name === effect.agent) : undefined;
  return {
    message_id: stamp.message_id,
    room_id: room.room_id,
    seq: stamp.seq,
    timestamp: stamp.timestamp,
    sender: isRecord ? effect.agent : 'system',
    sender_id: isRecord ? (member?.participant_id ?? '') : 'system',
    role: isRecord ? 'ai_agent' : 'system',
    text_content: effect.text,
    text_content_i18n: null,
    source_language: room.language,
    file_url: '',
    file_type: '',
    mentions: [],
    visible: !isRecord,
    processed: false,
    response_to: null,
    display_timezone: room.timezone,
    round_id: effect.round_id,
    skip_reason: isRecord ? effect.skip_reason : null,
    deleted: false,
  };
}
