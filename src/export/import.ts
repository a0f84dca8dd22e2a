// import_chat_history, the pure half: validates a JSON room export (docs/export.md, format
// "agent-chatroom.room" version 1) strictly and builds the new room and its messages from it.
// Nothing here touches storage, so a file that fails any check creates nothing; the tool
// handler persists what `buildImport` returns.
import { z } from 'zod';
import { AppError } from '../errors.js';
import { schemaTexts } from '../i18n/schema-errors.js';
import { PARTICIPANT_NAME, nameKey } from '../identity/names.js';
import type { Member, Message, RoomRecord } from '../types.js';
import { language, roomDescription, roomName, timezone } from '../protocol/schemas.js';
import { ROOM_FORMAT, ROOM_FORMAT_VERSION } from './json.js';
import { TimeSlices } from '../time-slices.js';

/** At most this many messages in one import (a room's log is moved whole, in one request). */
export const MAX_IMPORT_MESSAGES = 20_000;
/** All texts of an import together, in characters. */
export const MAX_IMPORT_TOTAL_CHARS = 8_000_000;
/** Members listed in the file (the room cap of SPEC §10). */
export const MAX_IMPORT_MEMBERS = 200;
/** Nesting and node count of the raw value, checked before the schema walks it. */
const MAX_DEPTH = 12;
const MAX_NODES = 2_000_000;
/** Keys that would reach an object's prototype if any code ever merged the value. */
const HOSTILE_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

/** Invisible characters a name may not contain (SPEC §3): default-ignorables, variation selectors. */
const INVISIBLE = /[\p{Default_Ignorable_Code_Point}\uFE00-\uFE0F\u{E0100}-\u{E01EF}]/u;

/** A participant name as SPEC §3 allows it: NFC, no invisible characters, not only marks. */
function isCleanName(name: string): boolean {
  return PARTICIPANT_NAME.test(name) && name.normalize('NFC') === name && !INVISIBLE.test(name) && !/^\p{M}/u.test(name);
}

/** The form of every time in a room file: ISO 8601 with seconds and a zone. */
const ISO_TIME = /^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:\.\d{1,9})?(Z|([+-])(\d\d):(\d\d))$/;
/** The UTC years a stored time may fall in: toISOString writes others as ±YYYYYY, which no file holds. */
const FIRST_YEAR = 0;
const LAST_YEAR = 9999;

/**
 * A time that exists as written: Date.parse accepts 2026-02-30 (as 2026-03-02) and 24:00, which
 * would be stored as another time than the file says. The fields are read back from the parsed
 * time in the written offset and must equal what was written. Its UTC year must be 0000–9999,
 * so that the time is stored, and exported again, in the same four-digit form (9999-12-31T23:00
 * −14:00 is in UTC year 10000). Anything else, not matching the form at all included, is false
 * (zod runs the refinement even when the regex check failed).
 */
export function isRealTime(s: string): boolean {
  const m = ISO_TIME.exec(s);
  if (!m) return false;
  const ms = Date.parse(s);
  if (Number.isNaN(ms)) return false;
  const offsetMin = m[7] === 'Z' ? 0 : (m[8] === '-' ? -1 : 1) * (Number(m[9]) * 60 + Number(m[10]));
  if (Math.abs(offsetMin) > 14 * 60) return false;
  const utcYear = new Date(ms).getUTCFullYear();
  if (utcYear < FIRST_YEAR || utcYear > LAST_YEAR) return false;
  const local = new Date(ms + offsetMin * 60_000);
  return (
    local.getUTCFullYear() === Number(m[1]) &&
    local.getUTCMonth() + 1 === Number(m[2]) &&
    local.getUTCDate() === Number(m[3]) &&
    local.getUTCHours() === Number(m[4]) &&
    local.getUTCMinutes() === Number(m[5]) &&
    local.getUTCSeconds() === Number(m[6])
  );
}
const name = z.string().max(32).refine(isCleanName, 'not a valid participant name (SPEC §3)');
const isoTime = z
  .string()
  .max(40)
  .regex(ISO_TIME, 'not an ISO 8601 time (yyyy-MM-ddTHH:mm:ss[.sss] with Z or ±HH:mm)')
  .refine(isRealTime, 'not a valid time (it must exist as written, in UTC years 0000-9999)');

const id = z.string().min(1).max(128);

const announcement = z
  .object({
    user_announcement: z.string().max(2000),
    announcement_publisher: z.union([name, z.literal('')]),
    timestamp: isoTime.nullable(),
    system_announcement: z.string().max(2000),
  })
  .strict();

const settings = z
  .object({
    display_time_format: z.literal('24h'),
    display_date_format: z.literal('yyyy-MM-dd'),
    max_auto_rounds: z.number().int().min(1).max(1000),
    turn_timeout_ms: z.number().int().min(1000).max(86_400_000).nullable(),
  })
  .strict();

const room = z
  .object({
    room_id: z.string().max(200),
    room_name: roomName,
    room_description: z.string().max(200).pipe(roomDescription),
    created_at: isoTime,
    created_by: z.union([name, z.literal('')]),
    has_password: z.boolean(),
    interaction_mode: z.enum(['default', 'host']),
    user_participation: z.boolean(),
    system_status: z.enum(['active', 'paused']),
    language,
    timezone,
    announcement,
    settings,
    archived: z.boolean(),
  })
  .strict();

const member = z
  .object({
    name,
    role: z.enum(['ai_agent', 'user']),
    introduce: z.string().max(500),
    is_host: z.boolean(),
    joined_at: isoTime,
    skip_list: z.array(z.string().max(50)).max(20),
    language_preference: z.string().max(35),
    timezone_preference: z.string().max(64),
  })
  .strict();

const roundSchema = z
  .object({
    round_id: id,
    number: z.number().int().min(1),
    first_seq: z.number().int().min(1).nullable(),
    last_seq: z.number().int().min(1).nullable(),
    started_at: isoTime.nullable(),
  })
  .strict();

function messageSchema(maxChars: number) {
  return z
    .object({
      message_id: id,
      room_id: z.string().max(200),
      seq: z.number().int().min(1),
      timestamp: isoTime,
      sender: z.union([name, z.literal('system')]),
      // null on messages this server imported (SPEC §10); never used: imports lend no identity.
      sender_id: z.string().max(128).nullable(),
      role: z.enum(['ai_agent', 'user', 'system']),
      text_content: z.string().max(maxChars),
      text_content_i18n: z.null(),
      source_language: z.string().max(35),
      file_url: z.string().max(2048),
      file_type: z.string().max(255),
      mentions: z.array(name).max(MAX_IMPORT_MEMBERS),
      visible: z.boolean(),
      processed: z.boolean(),
      response_to: id.nullable(),
      display_timezone: z.string().max(64),
      round_id: id.nullable(),
      skip_reason: z.enum(['skip', 'timeout', 'offline', 'passed']).nullable(),
      deleted: z.boolean(),
      edited_at: isoTime.optional(),
      imported: z.literal(true).optional(),
    })
    .strict()
    .refine((m) => (m.role === 'system') === (m.sender === 'system'), 'a system message is sent by "system" and only by it')
    .refine((m) => m.visible || m.skip_reason !== null, 'an invisible message is a skip record and carries its skip_reason');
}

/**
 * The file without its two long arrays: `messages` and `rounds` are checked element by element
 * afterwards, in time slices (parseRoomFile), so a large file never holds the event loop.
 */
const fileHead = z
  .object({
    format: z.literal(ROOM_FORMAT),
    version: z.literal(ROOM_FORMAT_VERSION),
    exported_at: isoTime,
    room,
    members: z.array(member).max(MAX_IMPORT_MEMBERS),
    messages: z.array(z.unknown()).max(MAX_IMPORT_MESSAGES),
    rounds: z.array(z.unknown()).max(MAX_IMPORT_MESSAGES),
  })
  .strict();

type ImportedMessage = z.infer<ReturnType<typeof messageSchema>>;

export type RoomFile = Omit<z.infer<typeof fileHead>, 'messages' | 'rounds'> & {
  messages: ImportedMessage[];
  rounds: Array<z.infer<typeof roundSchema>>;
};

/** Schema checks of one import run in slices of this many elements between time checks. */
const CHECK_BATCH = 64;

/**
 * A validation_error naming the first problem (and up to five) by its path under `data`, its
 * message written in both languages (the caller reads the one it asked for, SPEC §7).
 */
function schemaError(schema: z.ZodType, value: unknown, error: z.ZodError, prefix: readonly string[]): AppError {
  const pathOf = (i: z.core.$ZodIssue) => ['data', ...prefix, ...i.path.map(String)].join('.');
  const texts = schemaTexts(schema, value, error, { prefix: ['data', ...prefix], whole: { en: 'data', 'zh-CN': 'data' } });
  const err = new AppError('validation_error', texts.en, {
    issues: error.issues.slice(0, 5).map((i) => ({ path: pathOf(i), message: i.message })),
  });
  err.texts = texts;
  return err;
}

/** Checks each element of `items` against `schema`, yielding to the event loop between slices. */
async function parseEach<T>(items: readonly unknown[], schema: z.ZodType<T>, field: string, slices: TimeSlices): Promise<T[]> {
  const out: T[] = [];
  for (let i = 0; i < items.length; i++) {
    const parsed = schema.safeParse(items[i]);
    if (!parsed.success) throw schemaError(schema, items[i], parsed.error, [field, String(i)]);
    out.push(parsed.data);
    if (i % CHECK_BATCH === CHECK_BATCH - 1) await slices.pause();
  }
  return out;
}

/**
 * Refuses keys that reach prototypes, and values nested or sized beyond any real export, before
 * the schema (or anything else) walks the value. Iterative: a deeply nested value cannot
 * exhaust the stack.
 */
export async function checkShape(data: unknown, slices = new TimeSlices()): Promise<void> {
  const stack: Array<{ value: unknown; depth: number; path: string }> = [{ value: data, depth: 0, path: 'data' }];
  let nodes = 0;
  while (stack.length > 0) {
    const { value, depth, path } = stack.pop()!;
    if (++nodes > MAX_NODES) throw new AppError('payload_too_large', 'The import is larger than any room export');
    if (nodes % 4096 === 0) await slices.pause();
    if (value === null || typeof value !== 'object') continue;
    if (depth >= MAX_DEPTH) throw new AppError('validation_error', `The import is nested too deeply at ${path}`);
    if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++) stack.push({ value: value[i], depth: depth + 1, path: `${path}[${i}]` });
      continue;
    }
    const proto = Object.getPrototypeOf(value);
    if (proto !== Object.prototype && proto !== null) throw new AppError('validation_error', `Not a plain JSON object at ${path}`);
    for (const key of Object.keys(value)) {
      if (HOSTILE_KEYS.has(key)) throw new AppError('validation_error', `Key "${key}" is not allowed (at ${path})`, { path, key });
      stack.push({ value: (value as Record<string, unknown>)[key], depth: depth + 1, path: `${path}.${key}` });
    }
  }
}

/** Validates `data` as a version-1 room export; throws validation_error naming the first problem. */
export async function parseRoomFile(data: unknown, maxMessageChars: number): Promise<RoomFile> {
  const slices = new TimeSlices();
  await checkShape(data, slices);
  if (data === null || typeof data !== 'object' || Array.isArray(data)) {
    throw new AppError('validation_error', 'data must be a JSON object: a room export (format "agent-chatroom.room")');
  }
  const head = data as Record<string, unknown>;
  if (head.format !== ROOM_FORMAT) throw new AppError('validation_error', `data.format must be "${ROOM_FORMAT}"`);
  if (head.version !== ROOM_FORMAT_VERSION) {
    throw new AppError('validation_error', `data.version ${JSON.stringify(head.version)} is not supported (this server reads version ${ROOM_FORMAT_VERSION})`);
  }
  const parsed = fileHead.safeParse(data);
  if (!parsed.success) throw schemaError(fileHead, data, parsed.error, []);
  const file: RoomFile = {
    ...parsed.data,
    messages: await parseEach(parsed.data.messages, messageSchema(maxMessageChars), 'messages', slices),
    rounds: await parseEach(parsed.data.rounds, roundSchema, 'rounds', slices),
  };
  let total = 0;
  let lastSeq = 0;
  const ids = new Set<string>();
  for (const m of file.messages) {
    total += m.text_content.length;
    if (m.seq <= lastSeq) throw new AppError('validation_error', `data.messages: seq ${m.seq} does not follow seq ${lastSeq} (messages must be in seq order)`);
    lastSeq = m.seq;
    if (ids.has(m.message_id)) throw new AppError('validation_error', `data.messages: message_id ${m.message_id} appears twice`);
    ids.add(m.message_id);
  }
  if (total > MAX_IMPORT_TOTAL_CHARS) throw new AppError('payload_too_large', `The messages hold more than ${MAX_IMPORT_TOTAL_CHARS} characters`);
  const memberNames = new Set<string>();
  for (const m of file.members) {
    const key = nameKey(m.name);
    if (memberNames.has(key)) throw new AppError('validation_error', `data.members: ${m.name} appears twice`);
    memberNames.add(key);
  }
  return file;
}

export interface ImportContext {
  /** The new room's id (SPEC §4), made by the caller from the room name. */
  roomId: string;
  /** The importer as the room's creator and only member. */
  creator: Member;
  now: Date;
  newId: () => string;
}

export interface BuiltImport {
  room: RoomRecord;
  messages: Message[];
}

/** Only absolute http(s) links survive an import: uploads of the old server are not here. */
export function importedFileUrl(url: string): string {
  if (!url) return '';
  try {
    const parsed = new URL(url);
    return parsed.protocol === 'https:' || parsed.protocol === 'http:' ? url : '';
  } catch {
    return '';
  }
}

/**
 * The new room and its log: new ids, seqs 1..n in file order, authors kept as names only
 * (`imported: true`, `sender_id: null`), replies and rounds re-linked to the new ids. The room
 * holds no round in progress, no announcement and no password, and every message counts as
 * processed.
 */
export async function buildImport(file: RoomFile, ctx: ImportContext, roomNameOverride?: string): Promise<BuiltImport> {
  const slices = new TimeSlices();
  const src = file.room;
  const roundIds = new Map<string, string>();
  const roundOf = (old: string | null): string | null => {
    if (old === null) return null;
    let fresh = roundIds.get(old);
    if (!fresh) {
      fresh = ctx.newId();
      roundIds.set(old, fresh);
    }
    return fresh;
  };
  for (const r of file.rounds) roundOf(r.round_id);

  const messageIds = new Map<string, string>();
  const messages: Message[] = [];
  for (const [i, m] of file.messages.entries()) {
    const messageId = ctx.newId();
    const fileUrl = m.deleted ? '' : importedFileUrl(m.file_url);
    const out: Message = {
      message_id: messageId,
      room_id: ctx.roomId,
      seq: i + 1,
      timestamp: new Date(m.timestamp).toISOString(),
      // The name stays as text; the message is nobody's here (SPEC §10): no participant of this
      // server may edit or delete it, and no agent's context takes it for its own.
      sender: m.sender,
      sender_id: null,
      role: m.role,
      text_content: m.deleted ? '' : m.text_content,
      text_content_i18n: null,
      source_language: m.source_language || src.language,
      file_url: fileUrl,
      file_type: fileUrl ? m.file_type : '',
      mentions: [...m.mentions],
      visible: m.visible,
      processed: true,
      response_to: m.response_to ? (messageIds.get(m.response_to) ?? null) : null,
      display_timezone: src.timezone,
      round_id: roundOf(m.round_id),
      skip_reason: m.skip_reason,
      deleted: m.deleted,
      imported: true,
    };
    if (m.edited_at) out.edited_at = new Date(m.edited_at).toISOString();
    messageIds.set(m.message_id, messageId);
    messages.push(out);
    if (i % CHECK_BATCH === CHECK_BATCH - 1) await slices.pause();
  }

  const room: RoomRecord = {
    room_id: ctx.roomId,
    room_name: roomNameOverride ?? src.room_name,
    room_description: src.room_description,
    created_at: ctx.now.toISOString(),
    created_by: ctx.creator.name,
    created_by_id: ctx.creator.participant_id,
    password_hash: null,
    interaction_mode: src.interaction_mode,
    user_participation: src.user_participation,
    system_status: 'active',
    language: src.language,
    timezone: src.timezone,
    members: [{ ...ctx.creator, is_host: true }],
    // The file's announcements are not taken over (SPEC §10): a standing notice in the importer's
    // room would speak with the server's or another person's voice.
    announcement: { user_announcement: '', announcement_publisher: '', timestamp: null, system_announcement: '' },
    current_round: null,
    history_rounds: [...roundIds.values()],
    settings: { ...src.settings },
    archived: false,
    processed_through_seq: messages.length,
  };
  return { room, messages };
}
