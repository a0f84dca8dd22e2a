// The room command union and its one exhaustive handler. Each command is checked (membership,
// permission), run through the pure engine, and turned into messages and events, all against a
// private draft of the room; the runtime (room-runtime.ts) commits the draft and only then makes
// it visible and publishes. A command that throws leaves its draft unused: no trace.
import { v4 as uuidv4 } from 'uuid';
import { cloneJson } from '../clone.js';
import { AppError } from '../errors.js';
import { yourTurn, type Activity, type AccessEvent, type MemberStatus, type RoomEvent } from '../protocol/events.js';
import { presentMessage, presentRoom, presentRoomUpdate } from '../rooms/present.js';
import type { EngineAction } from '../rounds/types.js';
import type { Caller, InteractionMode, Member, Message, RoomRecord, SystemStatus } from '../types.js';
import { runEngine, type StepEnv } from './engine-step.js';
import { mergeMentions, parseMentions } from '../messages/mentions.js';
import { systemAnnouncement } from '../i18n/room-texts.js';

/** A room holds at most this many members (SPEC §7 `room_full`). */
export const MAX_MEMBERS = 200;

export interface PostInput {
  text_content: string;
  response_to?: string | null | undefined;
  mentions?: string[] | undefined;
  file_url?: string | undefined;
  file_type?: string | undefined;
  end_turn?: boolean | undefined;
  client_msg_id?: string | undefined;
}

export interface SettingsChange {
  room_description?: string | undefined;
  /** Already hashed (the slow hash runs outside the room's queue); null clears. */
  password_hash?: string | null | undefined;
  interaction_mode?: InteractionMode | undefined;
  user_participation?: boolean | undefined;
  max_auto_rounds?: number | undefined;
  turn_timeout_ms?: number | null | undefined;
}

export type Command =
  | { type: 'post'; caller: Caller; input: PostInput }
  | { type: 'edit'; caller: Caller; messageId: string; text: string }
  | { type: 'delete'; caller: Caller; messageId: string }
  /** `passwordHash`: the room password hash the caller's password was verified against. */
  | { type: 'join'; caller: Caller; member: Member; passwordHash: string | null }
  | { type: 'leave'; caller: Caller }
  | { type: 'remove'; caller: Caller; name: string }
  | { type: 'set_status'; caller: Caller; status: SystemStatus }
  | { type: 'update_settings'; caller: Caller; change: SettingsChange }
  | { type: 'announce'; caller: Caller; text: string }
  | { type: 'archive'; caller: Caller }
  | { type: 'skip'; caller: Caller; reason?: string | undefined }
  | { type: 'extend'; caller: Caller }
  | { type: 'pass'; caller: Caller }
  | { type: 'start_round'; caller: Caller }
  | { type: 'set_activity'; caller: Caller; activity: Activity; note?: string | undefined }
  /** The armed deadline passed (stale ones change nothing). */
  | { type: 'timeout'; deadline: string }
  | { type: 'presence'; participantId: string; online: boolean; lastActive: number }
  /** Server start: the turn holder keeps its turn with a fresh deadline. */
  | { type: 'restart' };

/** What a command reads besides the draft (the store, through the runtime). */
export interface CommandReads {
  getMessage(messageId: string): Promise<Message | undefined>;
  findByClientMsgId(senderId: string, clientMsgId: string): Promise<Message | undefined>;
}

export interface CommandEnv extends Omit<StepEnv, 'online'> {
  maxMessageChars: number;
  /** Presence of a member (this node's presence; with a shared store also the stored status). */
  isOnline(member: Member): boolean;
}

/** A private copy of the room state that one command (or a batch of them) changes. */
export interface Draft {
  room: RoomRecord;
  lastSeq: number;
  lastPersonSeq: number;
  /** Messages to write (new ones and new versions), in order. */
  messages: Message[];
  events: RoomEvent[];
  /** Published before the room's events (sockets subscribe or leave first). */
  access: AccessEvent[];
  roomChanged: boolean;
  /** undefined = leave the timer as it is. */
  timer: string | null | undefined;
  turnsIssued: string[];
}

/** The answer, built from the room as committed (so `processed` marks are final). */
export type Answer = (committed: RoomRecord) => unknown;

export function isAdmin(room: RoomRecord, caller: Pick<Caller, 'id'>): boolean {
  return room.created_by_id === caller.id || room.members.some((m) => m.participant_id === caller.id && m.is_host);
}

export function memberOf(room: RoomRecord, caller: Pick<Caller, 'id'>): Member {
  const member = room.members.find((m) => m.participant_id === caller.id);
  if (!member) throw new AppError('not_a_member', 'You are not a member of this room');
  return member;
}

function requireAdmin(room: RoomRecord, caller: Caller): Member {
  const member = memberOf(room, caller);
  if (!isAdmin(room, caller)) throw new AppError('forbidden', 'Only the room creator or host may do this');
  return member;
}

function requireWritable(room: RoomRecord): void {
  if (room.archived) throw new AppError('forbidden', 'This room is archived and read-only');
}

/** Room admins and every person member may pause/resume and start rounds (SPEC §3). */
function requireSteward(room: RoomRecord, caller: Caller): Member {
  const member = memberOf(room, caller);
  if (member.role !== 'user' && !isAdmin(room, caller)) {
    throw new AppError('forbidden', 'Only people and room admins may do this');
  }
  return member;
}

function isEngineRecord(m: Message): boolean {
  return m.role === 'system' || m.skip_reason !== null;
}

export function memberStatus(member: Member): MemberStatus {
  return {
    name: member.name,
    status: member.status,
    last_active: member.last_active,
    activity: member.activity ?? null,
    note: member.activity_note ?? null,
  };
}

/**
 * Runs one command on the draft. A command that needs no store read (a post without
 * client_msg_id or response_to, a join, a status, presence…) runs and answers synchronously:
 * a send through the runtime then costs no promise and no microtask beyond the commit's own
 * (four async steps per send were a measurable part of its CPU, issue 40). The others (an edit,
 * a delete, a post that must look a message up) return a promise.
 */
export function handle(draft: Draft, cmd: Command, env: CommandEnv, reads: CommandReads): Answer | Promise<Answer> {
  const eventsBefore = draft.events.length;
  const answer = handleOne(draft, cmd, env, reads);
  if (answer instanceof Promise) {
    return answer.then((a) => {
      refreshStandingNotice(draft, env, eventsBefore);
      return a;
    });
  }
  refreshStandingNotice(draft, env, eventsBefore);
  return answer;
}

/**
 * Keeps `announcement.system_announcement` saying why the room stands still (SPEC §4): paused
 * (and by whom), the loop guard tripped, no agent online. Every command may change one of these
 * (a pause, a post that trips the guard, a person's message that resets it, presence), so it is
 * recomputed after each; a change goes out as `room_update` and is stored with the command.
 */
function refreshStandingNotice(draft: Draft, env: CommandEnv, eventsBefore: number): void {
  const room = draft.room;
  const agents = room.members.filter((m) => m.role === 'ai_agent');
  const text = systemAnnouncement(room.language, {
    pausedBy: room.system_status === 'paused' ? (room.paused_by ?? '') : null,
    guardTripped: room.current_round?.guard_tripped === true,
    noAgentOnline: agents.length > 0 && !agents.some((m) => env.isOnline(m)),
  });
  if (text === room.announcement.system_announcement) return;
  room.announcement = { ...room.announcement, system_announcement: text };
  // The command's own room_update (a pause, a settings change) carries the notice: one event,
  // with the room as the command left it, rather than a second one right behind it.
  for (let i = draft.events.length - 1; i >= eventsBefore; i--) {
    const event = draft.events[i]!;
    if (event.event !== 'room_update') continue;
    draft.events[i] = { event: 'room_update', room_id: room.room_id, data: { room: presentRoomUpdate(room) } };
    draft.roomChanged = true;
    return;
  }
  roomUpdated(draft);
}

function handleOne(draft: Draft, cmd: Command, env: CommandEnv, reads: CommandReads): Answer | Promise<Answer> {
  switch (cmd.type) {
    case 'post':
      return post(draft, cmd.caller, cmd.input, env, reads);
    case 'edit':
      return edit(draft, cmd.caller, cmd.messageId, cmd.text, env, reads);
    case 'delete':
      return remove(draft, cmd.caller, cmd.messageId, env, reads);
    case 'join':
      return join(draft, cmd.caller, cmd.member, cmd.passwordHash, env);
    case 'leave':
      return leave(draft, memberOf(draft.room, cmd.caller), env);
    case 'remove': {
      requireAdmin(draft.room, cmd.caller);
      const target = draft.room.members.find((m) => m.name.toLowerCase() === cmd.name.toLowerCase());
      if (!target) throw new AppError('not_found', `${cmd.name} is not a member of this room`);
      return leave(draft, target, env);
    }
    case 'set_status': {
      requireSteward(draft.room, cmd.caller);
      requireWritable(draft.room);
      if (draft.room.system_status === cmd.status) return roomAnswer;
      draft.room.system_status = cmd.status;
      pausedBy(draft.room, cmd.status === 'paused' ? cmd.caller.name : null);
      engine(draft, { type: 'status_changed' }, env, true);
      return roomAnswer;
    }
    case 'update_settings':
      return updateSettings(draft, cmd.caller, cmd.change, env);
    case 'announce': {
      requireAdmin(draft.room, cmd.caller);
      requireWritable(draft.room);
      draft.room.announcement = {
        ...draft.room.announcement,
        user_announcement: cmd.text,
        announcement_publisher: cmd.caller.name,
        timestamp: new Date(env.now).toISOString(),
      };
      roomUpdated(draft);
      return roomAnswer;
    }
    case 'archive': {
      memberOf(draft.room, cmd.caller);
      if (draft.room.created_by_id !== cmd.caller.id) throw new AppError('forbidden', 'Only the room creator may archive it');
      if (draft.room.archived) return roomAnswer;
      draft.room.archived = true;
      if (draft.room.system_status !== 'paused') pausedBy(draft.room, cmd.caller.name);
      draft.room.system_status = 'paused';
      engine(draft, { type: 'status_changed' }, env, true);
      return roomAnswer;
    }
    case 'skip': {
      memberOf(draft.room, cmd.caller);
      requireWritable(draft.room);
      engine(draft, { type: 'skip', agent: cmd.caller.name, ...(cmd.reason ? { reason: cmd.reason } : {}) }, env);
      return () => ({ skipped: true });
    }
    case 'extend': {
      memberOf(draft.room, cmd.caller);
      requireWritable(draft.room);
      engine(draft, { type: 'extend_turn', agent: cmd.caller.name }, env);
      const name = cmd.caller.name;
      return (room) => ({ your_turn: yourTurn(room, name), extensions: room.current_round?.turn?.extensions ?? 0 });
    }
    case 'pass': {
      requireAdmin(draft.room, cmd.caller);
      requireWritable(draft.room);
      const holder = draft.room.current_round?.turn?.agent ?? null;
      engine(draft, { type: 'pass_turn', by: cmd.caller.name }, env);
      return (room) => ({ passed: holder, current_round: room.current_round });
    }
    case 'start_round': {
      const member = requireSteward(draft.room, cmd.caller);
      requireWritable(draft.room);
      engine(draft, { type: 'start_round', by: cmd.caller.name, byPerson: member.role === 'user' }, env);
      return (room) => room.current_round;
    }
    case 'set_activity':
      return setActivity(draft, cmd.caller, cmd.activity, cmd.note);
    case 'timeout': {
      const turn = draft.room.current_round?.turn;
      if (!turn || turn.deadline !== cmd.deadline || draft.room.current_round?.completed) return () => null;
      engine(draft, { type: 'timeout' }, env);
      return () => null;
    }
    case 'presence':
      return presence(draft, cmd.participantId, cmd.online, cmd.lastActive, env);
    case 'restart':
      if (draft.room.current_round?.turn && !draft.room.current_round.completed) engine(draft, { type: 'restart' }, env);
      return () => null;
    default: {
      const never: never = cmd;
      throw new Error(`unknown command ${JSON.stringify(never)}`);
    }
  }
}

const roomAnswer: Answer = (room) => presentRoom(room);

/** Who paused the room, for its standing notice; null when it runs. */
function pausedBy(room: RoomRecord, name: string | null): void {
  if (name === null) delete room.paused_by;
  else room.paused_by = name;
}

/** Runs one engine action on the draft; refusals become errors. */
function engine(draft: Draft, action: EngineAction, env: CommandEnv, roomChanged = false, lead: Message[] = []): void {
  const running = draft.room.current_round && !draft.room.current_round.completed ? draft.room.current_round : null;
  const holderBefore = running?.turn?.agent ?? null;
  const turnBefore = turnKey(draft.room);
  const online = new Set(draft.room.members.filter((m) => m.role === 'ai_agent' && env.isOnline(m)).map((m) => m.name));
  const step = runEngine({ room: draft.room, lastSeq: draft.lastSeq, lastPersonSeq: draft.lastPersonSeq }, action, { ...env, online });
  if (!step.ok) throw new AppError(step.code, step.message, step.details);
  // The caller's own messages go first, announced with the processed marks as they are now. A
  // message belongs to the round it was posted in; an agent's message that opened an idle room
  // belongs to the round it started.
  for (const m of lead) {
    m.round_id = running?.round_id ?? (m.role === 'ai_agent' ? (draft.room.current_round?.round_id ?? null) : null);
    draft.messages.push(m);
    draft.events.push({ event: 'message_new', room_id: draft.room.room_id, data: { message: presentMessage(m, draft.room) } });
  }
  draft.messages.push(...step.messages);
  draft.lastSeq += step.messages.length;
  if (roomChanged) {
    // One room_update, with the room as the step left it, covers the step's own as well.
    draft.events.push({ event: 'room_update', room_id: draft.room.room_id, data: { room: presentRoomUpdate(draft.room) } });
    draft.events.push(...step.events.filter((e) => e.event !== 'room_update'));
  } else draft.events.push(...step.events);
  draft.roomChanged ||= step.changed || roomChanged;
  if (step.timer !== undefined) draft.timer = step.timer;
  draft.turnsIssued.push(...step.turnsIssued);
  // A reported activity lasts until the agent's turn ends (SPEC §7 set_activity), also when the
  // same agent is given the next turn in the same step (a new round that starts with it).
  if (holderBefore !== null && turnKey(draft.room) !== turnBefore) clearActivity(draft, holderBefore);
}

/**
 * Which turn is running: its round, its place in the queue and its holder (null: none). A turn
 * that ends moves at least one of them; one that goes on (a post that does not end it, an
 * extension, a resume, the holder mentioned again) keeps all three.
 */
function turnKey(room: RoomRecord): string | null {
  const r = room.current_round;
  if (!r || r.completed || !r.turn) return null;
  return `${r.round_id}\u0000${r.current_agent_index}\u0000${r.turn.agent}`;
}

function roomUpdated(draft: Draft): void {
  draft.roomChanged = true;
  draft.events.push({ event: 'room_update', room_id: draft.room.room_id, data: { room: presentRoomUpdate(draft.room) } });
}

// ── messages ──

function checkText(text: string, fileUrl: string, max: number): void {
  // A text has at most as many code points as UTF-16 units: count them only when it could be over.
  if (text.length > max && codePoints(text) > max) throw new AppError('payload_too_large', `text_content is longer than ${max} characters`);
  if (text.trim() === '' && !fileUrl) throw new AppError('validation_error', 'text_content is empty', { field: 'text_content' });
}

function codePoints(text: string): number {
  let n = 0;
  for (let i = 0; i < text.length; i++, n++) {
    const unit = text.charCodeAt(i);
    if (unit >= 0xd800 && unit <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) i++;
    }
  }
  return n;
}

function resolveMentions(room: RoomRecord, text: string, explicit: readonly string[]): string[] {
  // Most posts name nobody: no member list is built for them (a room holds up to 200).
  if (explicit.length === 0 && !text.includes('@')) return [];
  const byKey = new Map(room.members.map((m) => [m.name.toLowerCase(), m.name]));
  const resolved: string[] = [];
  const unknown: string[] = [];
  for (const raw of explicit) {
    const name = byKey.get(raw.replace(/^@/, '').toLowerCase());
    if (name) resolved.push(name);
    else unknown.push(raw);
  }
  if (unknown.length > 0) {
    throw new AppError('validation_error', `mentions names no member of this room: ${unknown.join(', ')}`, { field: 'mentions', unknown });
  }
  return mergeMentions(parseMentions(text, room.members.map((m) => m.name)), resolved);
}

function post(draft: Draft, caller: Caller, input: PostInput, env: CommandEnv, reads: CommandReads): Answer | Promise<Answer> {
  const member = memberOf(draft.room, caller);
  requireWritable(draft.room);
  checkText(input.text_content, input.file_url ?? '', env.maxMessageChars);
  if (!input.client_msg_id) return postNew(draft, caller, member, input, env, reads);
  // Only a durable message (or one earlier in this batch, committed together) counts.
  const key = input.client_msg_id;
  const inBatch = draft.messages.find((m) => m.sender_id === caller.id && m.client_msg_id === key);
  if (inBatch) return answerWith(inBatch);
  return reads.findByClientMsgId(caller.id, key).then((earlier) => (earlier ? answerWith(earlier) : postNew(draft, caller, member, input, env, reads)));
}

/** A post that is no retry: checked (a reply's target read first), then numbered and run through the engine. */
function postNew(draft: Draft, caller: Caller, member: Member, input: PostInput, env: CommandEnv, reads: CommandReads): Answer | Promise<Answer> {
  const room = draft.room;
  const admin = isAdmin(room, caller);
  if (member.role === 'user' && !room.user_participation && !admin) {
    throw new AppError('forbidden', 'People may not post in this room (user participation is off)');
  }
  if (member.role === 'ai_agent' && !input.file_url && isSkipPhrase(member, input.text_content)) return skipByPhrase(draft, caller, env);
  const target = input.response_to;
  if (!target) return postWrite(draft, caller, member, admin, input, env);
  const inBatch = draft.messages.find((m) => m.message_id === target);
  const checked = (found: Message | undefined): Answer => {
    if (!found || found.room_id !== room.room_id) throw new AppError('message_not_found', 'response_to names no message of this room');
    return postWrite(draft, caller, member, admin, input, env);
  };
  return inBatch ? checked(inBatch) : reads.getMessage(target).then(checked);
}

function answerWith(message: Message): Answer {
  return (committed) => presentMessage(message, committed);
}

function postWrite(draft: Draft, caller: Caller, member: Member, admin: boolean, input: PostInput, env: CommandEnv): Answer {
  const room = draft.room;
  const mentions = resolveMentions(room, input.text_content, input.mentions ?? []);
  const message: Message = {
    message_id: env.newId?.() ?? uuidv4(),
    room_id: room.room_id,
    seq: draft.lastSeq + 1,
    timestamp: new Date(env.now).toISOString(),
    sender: caller.name,
    sender_id: caller.id,
    role: member.role,
    text_content: input.text_content,
    text_content_i18n: null,
    source_language: room.language,
    file_url: input.file_url ?? '',
    file_type: input.file_type ?? '',
    mentions,
    visible: true,
    processed: false,
    response_to: input.response_to ?? null,
    display_timezone: room.timezone,
    round_id: null,
    skip_reason: null,
    deleted: false,
    ...(input.client_msg_id ? { client_msg_id: input.client_msg_id } : {}),
  };
  draft.lastSeq = message.seq;
  if (member.role === 'user') draft.lastPersonSeq = message.seq;
  // The message is numbered before the engine runs, so its records follow it.
  const action: EngineAction = { type: 'message', sender: caller.name, role: member.role, isAdmin: admin, seq: message.seq, mentions, endTurn: input.end_turn ?? true };
  engine(draft, action, env, false, [message]);
  // An agent's post ends the activity it reported.
  clearActivity(draft, caller.name);
  return answerWith(message);
}

/** SPEC §4 skip_list: the whole text, trimmed, equals one of the agent's pass phrases, ignoring case. */
function isSkipPhrase(member: Member, text: string): boolean {
  const said = text.trim().toLowerCase();
  return said !== '' && member.skip_list.some((phrase) => phrase.trim().toLowerCase() === said);
}

/** What send_message answers when its text was a pass phrase: the skip record (null when none was written). */
export interface PhraseSkip {
  skipped: true;
  message: Message | null;
}

/**
 * A pass phrase is a `skip_response` (no reason): an invisible skip record, or `cannot_skip` /
 * `not_your_turn` / `room_paused` as a skip would get, with nothing stored.
 */
function skipByPhrase(draft: Draft, caller: Caller, env: CommandEnv): Answer {
  const before = draft.messages.length;
  engine(draft, { type: 'skip', agent: caller.name }, env);
  const record = draft.messages.slice(before).find((m) => m.skip_reason === 'skip' && m.sender_id === caller.id) ?? null;
  return (committed): PhraseSkip => ({ skipped: true, message: record ? presentMessage(record, committed) : null });
}

async function readable(draft: Draft, caller: Caller, messageId: string, reads: CommandReads): Promise<Message> {
  const message = [...draft.messages].reverse().find((m) => m.message_id === messageId) ?? (await reads.getMessage(messageId));
  // A non-member learns nothing, not even that the message exists.
  if (!message || message.room_id !== draft.room.room_id || !draft.room.members.some((m) => m.participant_id === caller.id)) {
    throw new AppError('message_not_found', 'Message not found');
  }
  return message;
}

function update(draft: Draft, next: Message): Answer {
  draft.messages.push(next);
  draft.events.push({ event: 'message_update', room_id: draft.room.room_id, data: { message: presentMessage(next, draft.room) } });
  return (committed) => presentMessage(next, committed);
}

async function edit(draft: Draft, caller: Caller, messageId: string, text: string, env: CommandEnv, reads: CommandReads): Promise<Answer> {
  const message = await readable(draft, caller, messageId, reads);
  if (isEngineRecord(message)) throw new AppError('forbidden', "The engine's records cannot be edited");
  if (message.imported) throw new AppError('forbidden', 'Imported messages belong to no one here and cannot be edited');
  if (message.sender_id !== caller.id) throw new AppError('forbidden', 'Only the sender may edit a message');
  if (!message.visible || message.deleted) throw new AppError('conflict', 'This message cannot be edited');
  checkText(text, message.file_url, env.maxMessageChars);
  requireWritable(draft.room);
  return update(draft, { ...message, text_content: text, edited_at: new Date(env.now).toISOString() });
}

async function remove(draft: Draft, caller: Caller, messageId: string, env: CommandEnv, reads: CommandReads): Promise<Answer> {
  const message = await readable(draft, caller, messageId, reads);
  if (isEngineRecord(message)) throw new AppError('forbidden', "The engine's records cannot be deleted");
  // SPEC §10: no participant may edit or delete an imported message, not even an admin.
  if (message.imported) throw new AppError('forbidden', 'Imported messages belong to no one here and cannot be deleted');
  if (message.sender_id !== caller.id && !isAdmin(draft.room, caller)) {
    throw new AppError('forbidden', 'Only the sender or a room admin may delete a message');
  }
  requireWritable(draft.room);
  if (message.deleted) return (committed) => presentMessage(message, committed);
  void env;
  return update(draft, { ...message, text_content: '', file_url: '', file_type: '', deleted: true });
}

// ── membership ──

function join(draft: Draft, caller: Caller, member: Member, passwordHash: string | null, env: CommandEnv): Answer {
  const room = draft.room;
  if (room.members.some((m) => m.participant_id === caller.id)) return roomAnswer;
  requireWritable(room);
  // The password was checked against this hash outside the queue; a change since voids it.
  if (room.password_hash !== null && room.password_hash !== passwordHash) throw new AppError('wrong_password', 'This room needs a password');
  if (room.members.length >= MAX_MEMBERS) throw new AppError('room_full', `A room holds at most ${MAX_MEMBERS} members`);
  const joined: Member = { ...member, is_host: room.members.length === 0 };
  room.members.push(joined);
  draft.access.push({ type: 'joined', room_id: room.room_id, participant_id: caller.id });
  draft.events.push({ event: 'member_join', room_id: room.room_id, data: { member: cloneJson(joined) } });
  engine(draft, { type: 'member_joined', name: joined.name, role: joined.role }, env, true);
  return roomAnswer;
}

function leave(draft: Draft, member: Member, env: CommandEnv): Answer {
  const room = draft.room;
  room.members = room.members.filter((m) => m.participant_id !== member.participant_id);
  if (member.is_host && room.members.length > 0) {
    // The longest-standing member (earliest join) becomes host; members are kept in join order.
    room.members[0] = { ...room.members[0]!, is_host: true };
  }
  draft.access.push({ type: 'left', room_id: room.room_id, participant_id: member.participant_id });
  draft.events.push({ event: 'member_leave', room_id: room.room_id, data: { member: { ...cloneJson(member), is_host: false } } });
  engine(draft, { type: 'member_left', name: member.name, role: member.role }, env, true);
  return roomAnswer;
}

function updateSettings(draft: Draft, caller: Caller, change: SettingsChange, env: CommandEnv): Answer {
  const room = draft.room;
  requireAdmin(room, caller);
  requireWritable(room);
  if (change.room_description !== undefined) room.room_description = change.room_description;
  if (change.password_hash !== undefined) room.password_hash = change.password_hash;
  if (change.user_participation !== undefined) room.user_participation = change.user_participation;
  if (change.max_auto_rounds !== undefined) room.settings = { ...room.settings, max_auto_rounds: change.max_auto_rounds };
  if (change.turn_timeout_ms !== undefined) room.settings = { ...room.settings, turn_timeout_ms: change.turn_timeout_ms };
  if (change.interaction_mode !== undefined && change.interaction_mode !== room.interaction_mode) {
    room.interaction_mode = change.interaction_mode;
    engine(draft, { type: 'mode_changed' }, env, true);
  } else {
    roomUpdated(draft);
  }
  return roomAnswer;
}

// ── presence and activity ──

function statusChanged(draft: Draft, member: Member): void {
  draft.roomChanged = true;
  draft.events.push({ event: 'member_status_change', room_id: draft.room.room_id, data: { member: memberStatus(member) } });
}

/**
 * The draft's own copy of a member, to change in place: the draft shares member objects with
 * the committed room (room-runtime.ts `draftOf`), so one is copied before its first change.
 */
function writableMember(draft: Draft, member: Member): Member {
  const i = draft.room.members.indexOf(member);
  if (i < 0) throw new Error('writableMember: not a member of the draft');
  const own = { ...member };
  draft.room.members[i] = own;
  return own;
}

function presence(draft: Draft, participantId: string, online: boolean, lastActive: number, env: CommandEnv): Answer {
  const room = draft.room;
  const found = room.members.find((m) => m.participant_id === participantId);
  if (!found) return () => null;
  const status = online ? (found.activity ? 'busy' : 'online') : 'offline';
  const iso = new Date(lastActive).toISOString();
  if (found.status === status) return () => null;
  const member = writableMember(draft, found);
  member.status = status;
  member.last_active = iso;
  if (!online) {
    member.activity = null;
    member.activity_note = null;
  }
  statusChanged(draft, member);
  if (online && member.role === 'ai_agent' && !room.archived) engine(draft, { type: 'came_online', name: member.name }, env);
  return () => null;
}

function setActivity(draft: Draft, caller: Caller, activity: Activity, note: string | undefined): Answer {
  const found = memberOf(draft.room, caller);
  if (found.role !== 'ai_agent') throw new AppError('forbidden', 'Only agents report an activity');
  requireWritable(draft.room);
  const member = writableMember(draft, found);
  if (activity === 'idle') {
    // Busy no more; a note given with it stays until the turn ends (why an agent stopped: the
    // runners report a failed turn that cannot be skipped this way, docs/agents.md).
    member.activity = null;
    member.activity_note = note ?? null;
    member.status = 'online';
  } else {
    member.activity = activity;
    member.activity_note = note ?? null;
    member.status = 'busy';
  }
  statusChanged(draft, member);
  // The member as stored, plus the note under the name its broadcast uses (SPEC §7/§8: `note`).
  return () => ({ member: { ...cloneJson(member), note: member.activity_note ?? null } });
}

function clearActivity(draft: Draft, name: string): void {
  const found = draft.room.members.find((m) => m.name === name);
  if (!found || (!found.activity && !found.activity_note)) return;
  const member = writableMember(draft, found);
  member.activity = null;
  member.activity_note = null;
  if (member.status === 'busy') member.status = 'online';
  statusChanged(draft, member);
}
