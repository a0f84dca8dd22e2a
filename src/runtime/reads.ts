// Reads of rooms and messages, with the isolation check on each: only members read a room.
// Room state comes from the committed runtime state; messages from the store (durable only).
import { AppError } from '../errors.js';
import { displayTime } from '../messages/time.js';
import { yourTurn } from '../protocol/events.js';
import { presentMessage, presentRoom } from '../rooms/present.js';
import { roomStats } from '../rounds/stats.js';
import type { MessagePage, Store } from '../storage/store.js';
import type { Caller, Message, Room, RoomRecord } from '../types.js';
import { memberOf } from './commands.js';
import type { Rooms } from './rooms.js';

export const CONTEXT_TEXT_LIMIT = 2000;
export const DEFAULT_CONTEXT_LIMIT = 50;
/** Messages read per store call when a read walks the log (stats, context). */
const PAGE = 500;

export type ContextMessage = Message & { display_time: string; truncated?: boolean };

export class RoomReads {
  constructor(
    private readonly rooms: Rooms,
    private readonly store: Store,
  ) {}

  /** Isolation: the committed room, or not_a_member / room_not_found. */
  async memberRoom(roomId: string, caller: Pick<Caller, 'id'>): Promise<RoomRecord> {
    const room = await this.rooms.room(roomId);
    memberOf(room, caller);
    return room;
  }

  async getRoom(roomId: string, caller: Caller): Promise<Room> {
    return presentRoom(await this.memberRoom(roomId, caller));
  }

  /** A message of a room the caller belongs to; a non-member learns nothing, not even that it exists. */
  async fullMessage(caller: Caller, messageId: string): Promise<Message> {
    const message = await this.store.getMessage(messageId);
    if (!message) throw new AppError('message_not_found', 'Message not found');
    const room = await this.rooms.currentRoom(message.room_id);
    if (!room || !room.members.some((m) => m.participant_id === caller.id)) throw new AppError('message_not_found', 'Message not found');
    return presentMessage(message, room);
  }

  async page(caller: Caller, roomId: string, opts: { before_seq?: number | undefined; after_seq?: number | undefined; limit?: number | undefined }): Promise<Message[]> {
    const room = await this.memberRoom(roomId, caller);
    const page: MessagePage = { limit: opts.limit ?? 50 };
    if (opts.after_seq !== undefined) page.afterSeq = opts.after_seq;
    if (opts.before_seq !== undefined) page.beforeSeq = opts.before_seq;
    const messages = await this.store.readMessages(roomId, page);
    return messages.map((m) => presentMessage(m, room));
  }

  async search(caller: Caller, roomId: string, query: string, limit: number): Promise<Message[]> {
    const room = await this.memberRoom(roomId, caller);
    return (await this.store.searchMessages(roomId, query, limit)).map((m) => presentMessage(m, room));
  }

  async stats(caller: Caller, roomId: string) {
    const room = await this.memberRoom(roomId, caller);
    return roomStats(room, this.messagesOf(roomId));
  }

  /**
   * Every message of a room in seq order (exports, stats), read from the store a page at a time
   * as the consumer asks for them: a page is all that is held, whatever the room's size (SPEC
   * §5: memory follows the working set; exports read old messages from disk on demand).
   */
  async *messagesOf(roomId: string): AsyncGenerator<Message> {
    for (let after = 0; ; ) {
      const page = await this.store.readMessages(roomId, { afterSeq: after, limit: PAGE });
      yield* page;
      if (page.length < PAGE) return;
      after = page[page.length - 1]!.seq;
    }
  }

  /** get_context: what an agent needs to take its turn. */
  async context(caller: Caller, roomId: string, limit = DEFAULT_CONTEXT_LIMIT) {
    const room = await this.memberRoom(roomId, caller);
    const since = await this.store.lastSeqBySender(roomId, caller.id);
    // Newest visible messages after the caller's last one, read backwards page by page.
    const recent: ContextMessage[] = [];
    let oldestReturned = Infinity;
    let before: number | undefined;
    // Most messages are visible: the newest `limit` usually suffice (reading PAGE of them cost a
    // get_context ~5 ms of CPU in a big room); only then go back PAGE at a time.
    let size = Math.min(PAGE, limit + 1);
    let full = limit <= 0;
    walk: while (!full) {
      const page = await this.store.readMessages(roomId, before !== undefined ? { beforeSeq: before, limit: size } : { limit: size });
      for (let i = page.length - 1; i >= 0; i--) {
        const m = page[i]!;
        if (m.seq <= since) break walk;
        if (!m.visible) continue;
        recent.push(contextMessage(m, room));
        oldestReturned = m.seq;
        if ((full = recent.length >= limit)) break walk;
      }
      if (page.length < size || page[0]!.seq <= since + 1) break;
      before = page[0]!.seq;
      size = PAGE;
    }
    recent.reverse();
    // Visible unread messages older than those returned: counted, not returned (SPEC §7). The
    // store counts them from its index: reading them to count them made a get_context of a
    // member who never posted in a room of 3,000,000 messages read the whole room (seconds).
    const omitted = full ? await this.store.countVisible(roomId, since, Math.min(oldestReturned, Number.MAX_SAFE_INTEGER)) : 0;
    const round = room.current_round;
    const running = round && !round.completed ? round : null;
    return {
      messages: recent,
      omitted,
      members: room.members.map((m) => ({
        name: m.name,
        role: m.role,
        introduce: m.introduce,
        capabilities: m.capabilities ?? [],
        status: m.status,
        is_host: m.is_host,
        last_active: m.last_active,
        ...(m.activity ? { activity: m.activity, note: m.activity_note ?? null } : {}),
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
}

/**
 * A message as get_context shows it: what `presentMessage` gives (the stored fields but
 * `client_msg_id`, `processed` from the room), the text cut past CONTEXT_TEXT_LIMIT, and the
 * display time; keys in that order. Built in one pass (get_context presents up to 200 messages a
 * call: the rest-destructuring and two spreads it replaces cost ~5x as much CPU).
 */
export function contextMessage(m: Message, room: Pick<RoomRecord, 'processed_through_seq' | 'timezone'>): ContextMessage {
  const out: Record<string, unknown> = {};
  for (const key in m) if (key !== 'client_msg_id') out[key] = m[key as keyof Message];
  out.processed = m.seq <= room.processed_through_seq;
  const cut = firstChars(m.text_content, CONTEXT_TEXT_LIMIT);
  if (cut !== null) {
    out.text_content = cut;
    out.truncated = true;
  }
  out.display_time = displayTime(m.timestamp, room.timezone);
  return out as unknown as ContextMessage;
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
