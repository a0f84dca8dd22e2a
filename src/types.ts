// The data model of SPEC §4: field names are exact, as stored and as returned.
import type { CurrentRound, RoundEndReason } from './rounds/types.js';

export type Role = 'ai_agent' | 'user' | 'system';
export type ParticipantKind = 'agent' | 'user';
export type SkipReason = 'skip' | 'timeout' | 'offline' | 'passed';
export type InteractionMode = 'default' | 'host';
export type SystemStatus = 'active' | 'paused';
export type PresenceStatus = 'online' | 'offline';
/** A member's status: `busy` while an agent reports an activity (set_activity). */
export type MemberStatusValue = 'online' | 'offline' | 'busy';

export interface Message {
  message_id: string;
  room_id: string;
  seq: number;
  /** ISO 8601 UTC with milliseconds. */
  timestamp: string;
  sender: string;
  /** null for an imported message: it lends no one an identity (SPEC §10). */
  sender_id: string | null;
  /** Set on messages that came from import_chat_history (SPEC §10). */
  imported?: true;
  role: Role;
  text_content: string;
  text_content_i18n: null;
  source_language: string;
  file_url: string;
  file_type: string;
  mentions: string[];
  visible: boolean;
  processed: boolean;
  response_to: string | null;
  display_timezone: string;
  round_id: string | null;
  skip_reason: SkipReason | null;
  deleted: boolean;
  /** Set by the sender for idempotent retries; never shown to others. */
  client_msg_id?: string;
  /** Set once a message was edited. */
  edited_at?: string;
}

export interface Member {
  name: string;
  role: 'ai_agent' | 'user';
  introduce: string;
  status: MemberStatusValue;
  last_active: string;
  is_host: boolean;
  /** What the agent reported with set_activity (absent or null = nothing). */
  activity?: 'thinking' | 'working' | null;
  activity_note?: string | null;
  skip_list: string[];
  /**
   * What the agent is good at (its registration's `capabilities`), kept with the membership for
   * get_context's members (SPEC §4); not among the fields a room's members are shown with
   * (rooms/present.ts). Absent (joined before it was kept) = none.
   */
  capabilities?: string[];
  language_preference: string;
  timezone_preference: string;
  /** agent_id or user_id of the participant. */
  participant_id: string;
  joined_at: string;
}

export interface Announcement {
  user_announcement: string;
  announcement_publisher: string;
  timestamp: string | null;
  system_announcement: string;
}

export interface RoomSettings {
  display_time_format: '24h';
  display_date_format: 'yyyy-MM-dd';
  max_auto_rounds: number;
  /** null = the server's TURN_TIMEOUT_MS. */
  turn_timeout_ms: number | null;
}

/** A room as stored in rooms.json. `toPublicRoom` strips what must never leave the server. */
export interface RoomRecord {
  room_id: string;
  room_name: string;
  room_description: string;
  created_at: string;
  created_by: string;
  /** Participant id of the creator (names are for display). */
  created_by_id: string;
  password_hash: string | null;
  interaction_mode: InteractionMode;
  user_participation: boolean;
  system_status: SystemStatus;
  language: string;
  timezone: string;
  members: Member[];
  announcement: Announcement;
  current_round: CurrentRound | null;
  history_rounds: string[];
  settings: RoomSettings;
  archived: boolean;
  /** Every message with seq ≤ this is processed (SPEC §5). */
  processed_through_seq: number;
  /**
   * Agents mentioned by people while the room was paused and idle, for the round that starts on
   * resume (SPEC §6.1.9; the turn engine's RoundState.paused_mentions). Absent = none.
   */
  paused_mentions?: string[];
  /**
   * Who paused the room (while it is paused), for the standing notice `system_announcement`
   * (SPEC §4). Internal bookkeeping, not shown to clients. Absent = not paused or not known.
   */
  paused_by?: string;
  /**
   * The last rounds that ended (at most RECENT_ROUND_ENDS of src/runtime/engine-step.ts, oldest
   * first), each with the reason its `round_end` gave. `current_round` keeps only the last round,
   * and a round ended by a commit that also started the next one is gone from it: a node that
   * did not make the commit reads the reason here (change-events.ts, SPEC §11). Internal
   * bookkeeping, not shown to clients. Absent (rooms stored before it) = none.
   */
  recent_round_ends?: RoundEnd[];
}

/** How one round ended: its id and the reason of its `round_end` (SPEC §8). */
export interface RoundEnd {
  round_id: string;
  reason: RoundEndReason;
}

export type Room = Omit<RoomRecord, 'password_hash' | 'created_by_id' | 'processed_through_seq' | 'recent_round_ends' | 'paused_by'> & {
  has_password: boolean;
};

/** The room a `room_update` event carries: without `history_rounds` (rooms/present.ts). */
export type RoomUpdateRoom = Omit<Room, 'history_rounds'>;

export interface PublicRoomSummary {
  room_id: string;
  room_name: string;
  room_description: string;
  interaction_mode: InteractionMode;
  member_count: number;
  has_password: boolean;
  archived: boolean;
}

export interface AgentRecord {
  agent_id: string;
  name: string;
  introduce: string;
  rooms: string[];
  status: 'online' | 'offline' | 'busy';
  last_active: string;
  capabilities: string[];
  skip_list: string[];
  language_support: string[];
  preferred_language: string;
  timezone: string;
  created_at: string;
  /** SHA-256 of each live token (a person may be logged in on several browsers). */
  token_hashes: string[];
}

export interface UserRecord {
  user_id: string;
  name: string;
  language: string;
  timezone: string;
  rooms: string[];
  last_active: string;
  created_at: string;
  token_hashes: string[];
  /** scrypt hash, or null when the person set no password. */
  password_hash: string | null;
}

export type Agent = Omit<AgentRecord, 'token_hashes'>;
export type User = Omit<UserRecord, 'token_hashes' | 'password_hash'> & { has_password: boolean };

/** Who is calling: resolved from the token by the registry. */
export interface Participant {
  kind: ParticipantKind;
  id: string;
  name: string;
  role: 'ai_agent' | 'user';
}

/** A participant plus the token hash it authenticated with (rotate_token replaces that one). */
export interface Caller extends Participant {
  tokenHash: string;
}
