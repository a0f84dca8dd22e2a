// Messages: send (through the turn engine), edit, delete, read, context, search, paging.
import { v4 as uuidv4 } from 'uuid';
import { AppError } from '../errors.js';
import type { Committer } from '../rooms/commit.js';
import { presentMessage } from '../rooms/present.js';
import type { RoomService } from '../rooms/service.js';
import type { RoundsDriver } from '../rounds/driver.js';
import type { Store } from '../storage/store.js';
import type { Caller, Member, Message, RoomRecord } from '../types.js';
import { mergeMentions, parseMentions } from './mentions.js';
import { displayTime } from './time.js';

export interface SendInput {
  room_id: string;
  text_content: string;
  response_to?: string | null;
  mentions?: string[];
  file_url?: string;
  file_type?: string;
  end_turn?: boolean;
  client_msg_id?: string;
}

export const CONTEXT_TEXT_LIMIT = 2000;
export const DEFAULT_CONTEXT_LIMIT = 50;

export type ContextMessage = Message & { display_time: string; truncated?: boolean };

export class MessageService {
  /** room_id → `${sender_id}\u0000${client_msg_id}` → message_id, built lazily per room. */
  private readonly idempotency = new Map<string, Map<string, string>>();
  /** room_id → lowercased texts for search (see `lowercased`). */
  private readonly searchTexts = new Map<string, string[]>();

  constructor(
    private readonly store: Store,
    private readonly committer: Committer,
    private readonly rooms: RoomService,
    private readonly driver: RoundsDriver,
    private readonly maxMessageChars: number,
    private readonly now: () => number,
  ) {}

  async send(caller: Caller, input: SendInput): Promise<Message> {
    const { room, member } = this.rooms.requireMember(input.room_id, caller);
    this.rooms.requireWritable(room);
    this.checkText(input.text_content, input.file_url ?? '');
    const keys = input.client_msg_id ? this.idempotencyIndex(room.room_id) : undefined;
    const key = `${caller.id}\u0000${input.client_msg_id ?? ''}`;
    const earlier = keys?.get(key);
    if (earlier) return presentMessage(this.store.getMessage(earlier)!, room);

    const isAdmin = this.rooms.isAdmin(room, caller);
    if (member.role === 'user' && !room.user_participation && !isAdmin) {
      throw new AppError('forbidden', 'People may not post in this room (user participation is off)');
    }
    if (input.response_to) {
      const target = this.store.getMessage(input.response_to);
      if (!target || target.room_id !== room.room_id) {
        throw new AppError('message_not_found', 'response_to names no message of this room');
      }
    }
    const mentions = this.resolveMentions(room, input.text_content, input.mentions ?? []);

    const message: Message = {
      message_id: uuidv4(),
      room_id: room.room_id,
      seq: this.store.nextSeq(room.room_id),
      timestamp: new Date(this.now()).toISOString(),
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
    const outcome = this.driver.apply(
      room,
      {
        type: 'message',
        sender: caller.name,
        role: member.role,
        isAdmin,
        seq: message.seq,
        mentions,
        endTurn: input.end_turn ?? true,
      },
      { lead: [message] },
    );
    if (!outcome.ok) throw new AppError(outcome.code, outcome.message, outcome.details);
    keys?.set(key, message.message_id);
    await outcome.done;
    return presentMessage(message, room);
  }

  async edit(caller: Caller, messageId: string, text: string): Promise<Message> {
    const { message, room } = this.readable(caller, messageId);
    if (message.sender_id !== caller.id) throw new AppError('forbidden', 'Only the sender may edit a message');
    if (!message.visible || message.deleted) throw new AppError('conflict', 'This message cannot be edited');
    // The same rules as send: an edit must not turn a message into one send would refuse.
    this.checkText(text, message.file_url);
    this.rooms.requireWritable(room);
    return this.update(room, { ...message, text_content: text, edited_at: new Date(this.now()).toISOString() });
  }

  async delete(caller: Caller, messageId: string): Promise<Message> {
    const { message, room } = this.readable(caller, messageId);
    if (message.sender_id !== caller.id && !this.rooms.isAdmin(room, caller)) {
      throw new AppError('forbidden', 'Only the sender or a room admin may delete a message');
    }
    this.rooms.requireWritable(room);
    if (message.deleted) return presentMessage(message, room);
    return this.update(room, { ...message, text_content: '', file_url: '', file_type: '', deleted: true });
  }

  getFull(caller: Caller, messageId: string): Message {
    const { message, room } = this.readable(caller, messageId);
    return presentMessage(message, room);
  }

  /** Pages history both ways, skip records included. */
  page(caller: Caller, roomId: string, opts: { before_seq?: number; after_seq?: number; limit?: number }): Message[] {
    const { room } = this.rooms.requireMember(roomId, caller);
    const all = this.store.roomMessages(roomId);
    const limit = opts.limit ?? 50;
    // Logs are contiguous in seq (1..n), so seq k sits at index k-1.
    let slice: readonly Message[];
    if (opts.after_seq !== undefined) {
      const start = Math.max(0, opts.after_seq);
      const end = opts.before_seq !== undefined ? Math.max(start, opts.before_seq - 1) : all.length;
      slice = all.slice(start, Math.min(end, start + limit));
    } else {
      const end = Math.min(all.length, opts.before_seq !== undefined ? Math.max(0, opts.before_seq - 1) : all.length);
      slice = all.slice(Math.max(0, end - limit), end);
    }
    return slice.map((m) => presentMessage(m, room));
  }

  search(caller: Caller, roomId: string, query: string, limit: number): Message[] {
    const { room } = this.rooms.requireMember(roomId, caller);
    const needle = query.toLowerCase();
    const all = this.store.roomMessages(roomId);
    const lower = this.lowercased(roomId, all);
    const out: Message[] = [];
    for (let i = 0; i < all.length; i++) {
      if (!lower[i]!.includes(needle)) continue;
      const m = all[i]!;
      if (!m.visible || m.deleted) continue;
      out.push(presentMessage(m, room));
      if (out.length >= limit) break;
    }
    return out;
  }

  /**
   * Lowercased texts aligned with the room's messages (index = seq - 1), extended as the room
   * grows and patched on edits: lowercasing a million texts per query would cost ~10× the scan.
   */
  private lowercased(roomId: string, all: readonly Message[]): string[] {
    let lower = this.searchTexts.get(roomId);
    if (!lower) {
      lower = [];
      this.searchTexts.set(roomId, lower);
    }
    for (let i = lower.length; i < all.length; i++) lower.push(all[i]!.text_content.toLowerCase());
    return lower;
  }

  /** get_context: what an agent needs to take its turn. */
  context(caller: Caller, roomId: string, limit = DEFAULT_CONTEXT_LIMIT) {
    const { room } = this.rooms.requireMember(roomId, caller);
    const all = this.store.roomMessages(roomId);
    let since = 0;
    for (let i = all.length - 1; i >= 0; i--) {
      const m = all[i]!;
      if (m.sender_id === caller.id && m.visible) {
        since = m.seq;
        break;
      }
    }
    const recent: ContextMessage[] = [];
    for (let i = all.length - 1; i >= 0 && recent.length < limit; i--) {
      const m = all[i]!;
      if (m.seq <= since) break;
      if (!m.visible) continue;
      recent.push(this.contextMessage(m, room));
    }
    recent.reverse();
    const round = room.current_round;
    const running = round && !round.completed ? round : null;
    return {
      messages: recent,
      members: room.members.map((m: Member) => ({
        name: m.name,
        role: m.role,
        introduce: m.introduce,
        status: m.status,
        is_host: m.is_host,
        last_active: m.last_active,
      })),
      room: {
        room_id: room.room_id,
        room_name: room.room_name,
        room_description: room.room_description,
        interaction_mode: room.interaction_mode,
        system_status: room.system_status,
        user_participation: room.user_participation,
        announcement: room.announcement,
        language: room.language,
        timezone: room.timezone,
        current_round: running,
        current_agent: running?.turn?.agent ?? null,
      },
      your_turn: yourTurn(room, caller.name),
    };
  }

  private contextMessage(m: Message, room: RoomRecord): ContextMessage {
    const presented = presentMessage(m, room);
    const display_time = displayTime(m.timestamp, room.timezone);
    const cut = firstChars(m.text_content, CONTEXT_TEXT_LIMIT);
    if (cut === null) return { ...presented, display_time };
    return { ...presented, text_content: cut, truncated: true, display_time };
  }

  /** Text rules shared by send and edit: at most MAX_MESSAGE_CHARS, and not blank unless a file is attached. */
  private checkText(text: string, fileUrl: string): void {
    if ([...text].length > this.maxMessageChars) {
      throw new AppError('payload_too_large', `text_content is longer than ${this.maxMessageChars} characters`);
    }
    if (text.trim() === '' && !fileUrl) {
      throw new AppError('validation_error', 'text_content is empty', { field: 'text_content' });
    }
  }

  private readable(caller: Caller, messageId: string): { message: Message; room: RoomRecord } {
    const message = this.store.getMessage(messageId);
    if (!message) throw new AppError('message_not_found', 'Message not found');
    // A non-member learns nothing, not even that the message exists.
    const room = this.store.getRoom(message.room_id);
    if (!room || !room.members.some((m) => m.participant_id === caller.id)) {
      throw new AppError('message_not_found', 'Message not found');
    }
    return { message, room };
  }

  private async update(room: RoomRecord, next: Message): Promise<Message> {
    const presented = presentMessage(next, room);
    const lower = this.searchTexts.get(room.room_id);
    if (lower && next.seq <= lower.length) lower[next.seq - 1] = next.text_content.toLowerCase();
    await this.committer.commit(room.room_id, {
      messages: [next],
      events: [{ event: 'message_update', room_id: room.room_id, data: { message: presented } }],
    });
    return presented;
  }

  private resolveMentions(room: RoomRecord, text: string, explicit: readonly string[]): string[] {
    const names = room.members.map((m) => m.name);
    const resolved: string[] = [];
    const unknown: string[] = [];
    for (const raw of explicit) {
      const name = raw.replace(/^@/, '');
      const member = names.find((n) => n.toLowerCase() === name.toLowerCase());
      if (member) resolved.push(member);
      else unknown.push(raw);
    }
    if (unknown.length > 0) {
      throw new AppError('validation_error', `mentions names no member of this room: ${unknown.join(', ')}`, {
        field: 'mentions',
        unknown,
      });
    }
    return mergeMentions(parseMentions(text, names), resolved);
  }

  private idempotencyIndex(roomId: string): Map<string, string> {
    let index = this.idempotency.get(roomId);
    if (!index) {
      index = new Map();
      for (const m of this.store.roomMessages(roomId)) {
        if (m.client_msg_id) index.set(`${m.sender_id}\u0000${m.client_msg_id}`, m.message_id);
      }
      this.idempotency.set(roomId, index);
    }
    return index;
  }
}

export function yourTurn(room: RoomRecord, name: string) {
  const round = room.current_round;
  const turn = round && !round.completed ? round.turn : null;
  if (!round || !turn || turn.agent !== name || room.system_status === 'paused') return null;
  return {
    room_id: room.room_id,
    round_id: round.round_id,
    can_skip: turn.can_skip,
    reason: turn.reason,
    deadline: turn.deadline,
  };
}

/**
 * The first `limit` characters of `text`, counted in code points as MAX_MESSAGE_CHARS counts
 * them (so an emoji is never cut in half), or null when the text is not longer than that.
 */
function firstChars(text: string, limit: number): string | null {
  if (text.length <= limit) return null; // UTF-16 units ≥ code points
  let units = 0;
  for (let chars = 0; chars < limit && units < text.length; chars++) units += text.codePointAt(units)! > 0xffff ? 2 : 1;
  return units < text.length ? text.slice(0, units) : null;
}
