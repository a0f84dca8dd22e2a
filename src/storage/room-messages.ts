// One room's messages in memory, latest version of each, in seq order, with the small indexes
// the room runtime asks for on every call: last visible seq per sender (get_context), last
// person seq (turn engine) and the message per (sender, client_msg_id) (idempotent retries).
// None of them needs a scan on the common path; only a new version that takes a message out of
// an index (a delete, a message made invisible) looks back for the one before.
//
// Objects put in are owned by this class and never handed out (file-store.ts copies on read).
import type { Message } from '../types.js';

const clientKey = (senderId: string, clientMsgId: string): string => `${senderId}\u0000${clientMsgId}`;
const isPerson = (m: Message): boolean => m.role === 'user' && m.visible && !m.deleted;

export class RoomMessages {
  /** Latest versions ordered by seq (dense from 1 unless a log was edited by hand). */
  private readonly list: Message[] = [];
  private readonly byId = new Map<string, Message>();
  private readonly lastBySender = new Map<string, number>();
  private readonly byClient = new Map<string, string>();
  private lastPerson = 0;

  get count(): number {
    return this.list.length;
  }

  get lastSeq(): number {
    return this.list.length === 0 ? 0 : this.list[this.list.length - 1]!.seq;
  }

  get(messageId: string): Message | undefined {
    return this.byId.get(messageId);
  }

  has(messageId: string): boolean {
    return this.byId.has(messageId);
  }

  ids(): IterableIterator<string> {
    return this.byId.keys();
  }

  /** The message at a seq, if any. */
  atSeq(seq: number): Message | undefined {
    const i = this.positionOf(seq);
    const m = this.list[i];
    return m?.seq === seq ? m : undefined;
  }

  /** Adds a message or replaces its earlier version (messages in file / commit order). */
  apply(m: Message): void {
    const prev = this.byId.get(m.message_id);
    this.byId.set(m.message_id, m);
    if (prev) {
      const i = this.positionOf(prev.seq);
      if (this.list[i]?.message_id === prev.message_id && prev.seq === m.seq) this.list[i] = m;
      else {
        // Only a hand-edited log moves a message to another seq.
        const at = this.list.indexOf(prev);
        if (at >= 0) this.list.splice(at, 1);
        this.insert(m);
      }
    } else {
      this.insert(m);
    }
    if (m.client_msg_id !== undefined) this.byClient.set(clientKey(m.sender_id, m.client_msg_id), m.message_id);
    this.indexSender(m, prev);
    this.indexPerson(m, prev);
  }

  private insert(m: Message): void {
    if (this.list.length === 0 || this.list[this.list.length - 1]!.seq < m.seq) {
      this.list.push(m); // the normal case: logs are written in seq order
      return;
    }
    this.list.splice(this.positionOf(m.seq + 0.5), 0, m);
  }

  private indexSender(m: Message, prev: Message | undefined): void {
    const last = this.lastBySender.get(m.sender_id) ?? 0;
    if (m.visible && m.seq > last) this.lastBySender.set(m.sender_id, m.seq);
    else if (!m.visible && m.seq === last) this.lastBySender.set(m.sender_id, this.scanBack(m.seq, (x) => x.sender_id === m.sender_id && x.visible));
    if (prev && prev.sender_id !== m.sender_id && this.lastBySender.get(prev.sender_id) === prev.seq) {
      this.lastBySender.set(prev.sender_id, this.scanBack(prev.seq + 1, (x) => x.sender_id === prev.sender_id && x.visible));
    }
  }

  private indexPerson(m: Message, prev: Message | undefined): void {
    if (isPerson(m)) {
      if (m.seq > this.lastPerson) this.lastPerson = m.seq;
    } else if (m.seq === this.lastPerson || (prev && prev.seq === this.lastPerson)) {
      this.lastPerson = this.scanBack(this.lastPerson + 1, isPerson);
    }
  }

  /** The highest seq below `beforeSeq` whose message matches, or 0. */
  private scanBack(beforeSeq: number, match: (m: Message) => boolean): number {
    for (let i = this.positionOf(beforeSeq) - 1; i >= 0; i--) if (match(this.list[i]!)) return this.list[i]!.seq;
    return 0;
  }

  /** Index of the first message with seq >= `seq` (list.length if none). */
  private positionOf(seq: number): number {
    const guess = Math.ceil(seq) - (this.list[0]?.seq ?? 1);
    if (guess >= 0 && guess < this.list.length && this.list[guess]!.seq === seq) return guess;
    let lo = 0;
    let hi = this.list.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.list[mid]!.seq < seq) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** Messages with seq > afterSeq (ascending), or the newest ones with seq < beforeSeq (or both bounds). */
  page(afterSeq: number | undefined, beforeSeq: number | undefined, limit: number): Message[] {
    const n = Math.max(0, Math.floor(limit));
    const end = beforeSeq !== undefined ? this.positionOf(beforeSeq) : this.list.length;
    if (afterSeq !== undefined) {
      const start = this.positionOf(Math.floor(afterSeq) + 1);
      return this.list.slice(start, Math.max(start, Math.min(end, start + n)));
    }
    return this.list.slice(Math.max(0, end - n), end);
  }

  search(query: string, limit: number): Message[] {
    const needle = query.toLowerCase();
    const out: Message[] = [];
    if (limit <= 0) return out;
    for (const m of this.list) {
      if (!m.visible || m.deleted || !m.text_content.toLowerCase().includes(needle)) continue;
      out.push(m);
      if (out.length >= limit) break;
    }
    return out;
  }

  lastSeqBySender(senderId: string): number {
    return this.lastBySender.get(senderId) ?? 0;
  }

  lastPersonSeq(): number {
    return this.lastPerson;
  }

  byClientMsgId(senderId: string, clientMsgId: string): Message | undefined {
    const id = this.byClient.get(clientKey(senderId, clientMsgId));
    const m = id === undefined ? undefined : this.byId.get(id);
    return m && m.sender_id === senderId && m.client_msg_id === clientMsgId ? m : undefined;
  }
}
