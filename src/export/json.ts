// JSON export (SPEC §9): the documented, versioned room format that import_chat_history reads
// (docs/export.md). Everything a room is made of except secrets and server internals: the room's
// settings, its members, every message in seq order (skip records included) and its rounds.
// Streamed: one message is serialised at a time; only the small round table is kept.
import type { Message, Room } from '../types.js';
import type { ExportInput } from './format.js';
import { ChunkWriter } from './stream.js';
import { EXPORT_SLICE_MS } from './walk.js';

export const ROOM_FORMAT = 'agent-chatroom.room';
export const ROOM_FORMAT_VERSION = 1;

/** The room fields a JSON export carries (no password hash, no internal ids). */
export const EXPORTED_ROOM_FIELDS = [
  'room_id',
  'room_name',
  'room_description',
  'created_at',
  'created_by',
  'has_password',
  'interaction_mode',
  'user_participation',
  'system_status',
  'language',
  'timezone',
  'announcement',
  'settings',
  'archived',
] as const;

export type ExportedRoom = Pick<Room, (typeof EXPORTED_ROOM_FIELDS)[number]>;

export interface ExportedMember {
  name: string;
  role: 'ai_agent' | 'user';
  introduce: string;
  is_host: boolean;
  joined_at: string;
  skip_list: string[];
  language_preference: string;
  timezone_preference: string;
}

/** A message as exported: the stored message without the sender's private retry key. */
export type ExportedMessage = Omit<Message, 'client_msg_id'>;

export interface ExportedRound {
  round_id: string;
  /** 1-based, in the order the rounds first appear in the log. */
  number: number;
  /** seq of the round's first and last message (null for a round with no message left). */
  first_seq: number | null;
  last_seq: number | null;
  started_at: string | null;
}

export interface RoomExportV1 {
  format: typeof ROOM_FORMAT;
  version: typeof ROOM_FORMAT_VERSION;
  exported_at: string;
  room: ExportedRoom;
  members: ExportedMember[];
  messages: ExportedMessage[];
  rounds: ExportedRound[];
}

export function exportedRoom(room: Room): ExportedRoom {
  const out: Record<string, unknown> = {};
  for (const key of EXPORTED_ROOM_FIELDS) out[key] = structuredClone(room[key]);
  return out as ExportedRoom;
}

export function exportedMember(m: Room['members'][number]): ExportedMember {
  return {
    name: m.name,
    role: m.role,
    introduce: m.introduce,
    is_host: m.is_host,
    joined_at: m.joined_at,
    skip_list: [...m.skip_list],
    language_preference: m.language_preference,
    timezone_preference: m.timezone_preference,
  };
}

/** Field order of an exported message (stable output, easy diffs). */
export function exportedMessage(m: Message, mapUrl?: (u: string) => string): ExportedMessage {
  const out: ExportedMessage = {
    message_id: m.message_id,
    room_id: m.room_id,
    seq: m.seq,
    timestamp: m.timestamp,
    sender: m.sender,
    sender_id: m.sender_id,
    role: m.role,
    text_content: m.text_content,
    text_content_i18n: null,
    source_language: m.source_language,
    file_url: m.file_url && mapUrl ? mapUrl(m.file_url) : m.file_url,
    file_type: m.file_type,
    mentions: [...m.mentions],
    visible: m.visible,
    processed: m.processed,
    response_to: m.response_to,
    display_timezone: m.display_timezone,
    round_id: m.round_id,
    skip_reason: m.skip_reason,
    deleted: m.deleted,
  };
  if (m.edited_at) out.edited_at = m.edited_at;
  if (m.imported) out.imported = true;
  return out;
}

/** Writes the export to `out` and ends it; resolves once `out` has finished. */
export async function writeJsonExport(input: ExportInput, out: NodeJS.WritableStream): Promise<void> {
  const w = new ChunkWriter(out);
  const head = {
    format: ROOM_FORMAT,
    version: ROOM_FORMAT_VERSION,
    exported_at: input.exportedAt.toISOString(),
    room: exportedRoom(input.room),
    members: input.room.members.map(exportedMember),
  };
  const headJson = JSON.stringify(head, null, 2);
  w.push(`${headJson.slice(0, headJson.lastIndexOf('\n}'))},\n  "messages": [`);
  const rounds = new Map<string, ExportedRound>();
  let first = true;
  let sliceStart = performance.now();
  for await (const m of input.messages) {
    w.push(`${first ? '\n    ' : ',\n    '}${JSON.stringify(exportedMessage(m, input.fileUrl))}`);
    first = false;
    if (m.round_id) {
      const r = rounds.get(m.round_id);
      if (r) r.last_seq = m.seq;
      else rounds.set(m.round_id, { round_id: m.round_id, number: rounds.size + 1, first_seq: m.seq, last_seq: m.seq, started_at: m.timestamp });
    }
    await w.flush();
    if (performance.now() - sliceStart >= EXPORT_SLICE_MS) {
      await new Promise<void>((resolve) => setImmediate(resolve));
      sliceStart = performance.now();
    }
  }
  // Rounds the room remembers that no message refers to any more (all deleted, or none written).
  const known = [...input.room.history_rounds, ...(input.room.current_round ? [input.room.current_round.round_id] : [])];
  for (const id of known) {
    if (!rounds.has(id)) rounds.set(id, { round_id: id, number: rounds.size + 1, first_seq: null, last_seq: null, started_at: null });
  }
  const roundLines = [...rounds.values()].map((r) => `    ${JSON.stringify(r)}`);
  w.push(`${first ? '' : '\n  '}],\n  "rounds": [${roundLines.length ? `\n${roundLines.join(',\n')}\n  ` : ''}]\n}\n`);
  await w.end();
}
