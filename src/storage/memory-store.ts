// An in-memory Store for unit tests and the reference semantics of the seam (store.ts): every
// write is "durable" at once, and a write hook lets tests make any write fail without a trace.
import { cloneJson, cloneRoom } from '../clone.js';
import { checkCommitSeqs, participantIdOf, sameRecord, summarise } from './store-util.js';
import { NameTakenError, ParticipantChangedError, StaleRoomError } from './store.js';
import type { LoadedRoom, MessagePage, ParticipantRecord, RoomCommit, Store } from './store.js';
import type { Message, PublicRoomSummary, RoomRecord } from '../types.js';

export type WriteKind = 'participant' | 'createRoom' | 'commitRoom';

export interface MemoryStoreOptions {
  /** Called before every write; throw to make it fail (fault injection). */
  beforeWrite?: (kind: WriteKind, detail: string) => void;
}

interface RoomEntry {
  room: RoomRecord;
  version: number;
  /** Index seq-1 → latest version of the message. */
  messages: Message[];
}

const copy = cloneJson;

export class MemoryStore implements Store {
  private readonly participants = new Map<string, { participant: ParticipantRecord; nameKey: string }>();
  private readonly rooms = new Map<string, RoomEntry>();
  private readonly messageRoom = new Map<string, string>();

  constructor(private readonly options: MemoryStoreOptions = {}) {}

  async open(): Promise<void> {}
  async close(): Promise<void> {}

  // ── participants ──
  async getParticipant(id: string): Promise<ParticipantRecord | undefined> {
    const found = this.participants.get(id);
    return found ? copy(found.participant) : undefined;
  }

  async findParticipantByTokenHash(tokenHash: string): Promise<ParticipantRecord | undefined> {
    for (const { participant } of this.participants.values()) {
      if (participant.record.token_hashes.includes(tokenHash)) return copy(participant);
    }
    return undefined;
  }

  async findParticipantByNameKey(key: string): Promise<ParticipantRecord | undefined> {
    for (const found of this.participants.values()) if (found.nameKey === key) return copy(found.participant);
    return undefined;
  }

  async putParticipant(participant: ParticipantRecord, key: string, expected?: ParticipantRecord): Promise<void> {
    const id = participantIdOf(participant);
    for (const [otherId, found] of this.participants) {
      if (otherId !== id && found.nameKey === key) throw new NameTakenError(participant.record.name);
    }
    const current = this.participants.get(id)?.participant;
    if (expected && !sameRecord(current, expected) && !sameRecord(current, participant)) throw new ParticipantChangedError(id);
    this.options.beforeWrite?.('participant', id);
    this.participants.set(id, { participant: copy(participant), nameKey: key });
  }

  async listParticipants(): Promise<ParticipantRecord[]> {
    return [...this.participants.values()].map((p) => copy(p.participant));
  }

  // ── rooms ──
  async loadRoom(roomId: string): Promise<LoadedRoom | undefined> {
    const entry = this.rooms.get(roomId);
    if (!entry) return undefined;
    return { room: cloneRoom(entry.room), lastSeq: entry.messages.length, version: entry.version };
  }

  async listRoomIds(): Promise<string[]> {
    return [...this.rooms.keys()];
  }

  async roomIdsWhere(test: (room: Readonly<RoomRecord>) => boolean): Promise<string[]> {
    return [...this.rooms.values()].filter((e) => test(e.room)).map((e) => e.room.room_id);
  }

  async listRoomSummaries(includeArchived: boolean): Promise<PublicRoomSummary[]> {
    return [...this.rooms.values()].filter((e) => includeArchived || !e.room.archived).map((e) => summarise(e.room));
  }

  async roomsOf(participantId: string): Promise<string[]> {
    return [...this.rooms.values()]
      .filter((e) => e.room.members.some((m) => m.participant_id === participantId))
      .map((e) => e.room.room_id);
  }

  async createRoom(room: RoomRecord, messages: readonly Message[] = []): Promise<number> {
    if (this.rooms.has(room.room_id)) throw new Error(`room ${room.room_id} exists`);
    checkCommitSeqs(room.room_id, 0, () => undefined, messages);
    this.options.beforeWrite?.('createRoom', room.room_id);
    this.rooms.set(room.room_id, { room: cloneRoom(room), version: 1, messages: messages.map(copy) });
    for (const m of messages) this.messageRoom.set(m.message_id, room.room_id);
    return 1;
  }

  async commitRoom(roomId: string, commit: RoomCommit): Promise<number> {
    const entry = this.rooms.get(roomId);
    if (!entry) throw new Error(`room ${roomId} does not exist`);
    if (entry.version !== commit.expectedVersion) throw new StaleRoomError(roomId);
    checkCommitSeqs(roomId, entry.messages.length, (seq) => entry.messages[seq - 1]?.message_id, commit.messages);
    this.options.beforeWrite?.('commitRoom', roomId);
    for (const m of commit.messages) {
      entry.messages[m.seq - 1] = copy(m);
      this.messageRoom.set(m.message_id, roomId);
    }
    if (commit.room) entry.room = cloneRoom(commit.room);
    entry.version += 1;
    return entry.version;
  }

  // ── messages ──
  async getMessage(messageId: string): Promise<Message | undefined> {
    const roomId = this.messageRoom.get(messageId);
    const entry = roomId ? this.rooms.get(roomId) : undefined;
    const found = entry?.messages.find((m) => m.message_id === messageId);
    return found ? copy(found) : undefined;
  }

  async readMessages(roomId: string, page: MessagePage): Promise<Message[]> {
    const all = this.rooms.get(roomId)?.messages ?? [];
    let slice: Message[];
    if (page.afterSeq !== undefined) {
      const start = Math.max(0, page.afterSeq);
      const end = page.beforeSeq !== undefined ? Math.max(start, page.beforeSeq - 1) : all.length;
      slice = all.slice(start, Math.min(end, start + page.limit));
    } else {
      const end = Math.min(all.length, page.beforeSeq !== undefined ? Math.max(0, page.beforeSeq - 1) : all.length);
      slice = all.slice(Math.max(0, end - page.limit), end);
    }
    return slice.map(copy);
  }

  async searchMessages(roomId: string, query: string, limit: number): Promise<Message[]> {
    const needle = query.toLowerCase();
    const out: Message[] = [];
    for (const m of this.rooms.get(roomId)?.messages ?? []) {
      if (!m.visible || m.deleted || !m.text_content.toLowerCase().includes(needle)) continue;
      out.push(copy(m));
      if (out.length >= limit) break;
    }
    return out;
  }

  async lastSeqBySender(roomId: string, senderId: string): Promise<number> {
    const all = this.rooms.get(roomId)?.messages ?? [];
    for (let i = all.length - 1; i >= 0; i--) if (all[i]!.sender_id === senderId && all[i]!.visible) return all[i]!.seq;
    return 0;
  }

  async countVisible(roomId: string, afterSeq: number, beforeSeq: number): Promise<number> {
    return (this.rooms.get(roomId)?.messages ?? []).filter((m) => m.seq > afterSeq && m.seq < beforeSeq && m.visible).length;
  }

  async lastPersonSeq(roomId: string): Promise<number> {
    const all = this.rooms.get(roomId)?.messages ?? [];
    for (let i = all.length - 1; i >= 0; i--) {
      const m = all[i]!;
      if (m.role === 'user' && m.visible && !m.deleted) return m.seq;
    }
    return 0;
  }

  async findByClientMsgId(roomId: string, senderId: string, clientMsgId: string): Promise<Message | undefined> {
    const found = this.rooms
      .get(roomId)
      ?.messages.find((m) => m.sender_id === senderId && m.client_msg_id === clientMsgId);
    return found ? copy(found) : undefined;
  }

  async messageCount(): Promise<number> {
    let n = 0;
    for (const e of this.rooms.values()) n += e.messages.length;
    return n;
  }
}
