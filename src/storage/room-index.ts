// What the store keeps in memory about one room's messages, without the messages: for each seq
// the byte offset and length of its latest version's line in the log, two flag bits, and small
// tables to find a seq by message id or by (sender, client_msg_id). About 30 bytes a message,
// so 10,000,000 messages fit in a few hundred MB; the messages themselves are read from the log
// on demand (log-reader.ts) and the recent ones kept in the store's cache (message-cache.ts).
//
// The per-sender and per-person answers the runtime asks on every call are kept up to date by
// every line added: `lastSeqBySender` is a map of the room's senders, `lastPersonSeq` a number.
import { hash32, SeqTable } from './seq-table.js';

/** What the index needs from one log line (a message version). */
export interface LineMeta {
  messageId: string;
  seq: number;
  senderId: string;
  clientMsgId: string | undefined;
  visible: boolean;
  /** role `user`, visible, not deleted. */
  person: boolean;
}

const VISIBLE = 1;
const PERSON = 2;

export const clientKey = (senderId: string, clientMsgId: string): string => `${senderId}\u0000${clientMsgId}`;

export class RoomIndex {
  private offsets = new Float64Array(64).fill(-1);
  private lengths = new Uint32Array(64);
  private flags = new Uint8Array(64);
  private readonly ids = new SeqTable();
  private readonly clients = new SeqTable();
  private readonly lastBySender = new Map<string, number>();
  /** Senders whose last visible message became invisible: answer from disk (see file-store). */
  readonly staleSenders = new Set<string>();
  private lastPerson = 0;
  private top = 0;
  private present = 0;

  /** Highest seq (0 when empty). */
  get lastSeq(): number {
    return this.top;
  }

  /** Messages (distinct seqs). */
  get count(): number {
    return this.present;
  }

  get bytes(): number {
    return this.offsets.byteLength + this.lengths.byteLength + this.flags.byteLength + this.ids.bytes + this.clients.bytes;
  }

  has(seq: number): boolean {
    return seq >= 1 && seq <= this.top && this.offsets[seq - 1]! >= 0;
  }

  offsetOf(seq: number): number {
    return this.offsets[seq - 1]!;
  }

  lengthOf(seq: number): number {
    return this.lengths[seq - 1]!;
  }

  /** Adds a line: a new message, or a new version of one (which then replaces it). */
  add(meta: LineMeta, offset: number, length: number): void {
    const { seq } = meta;
    if (seq > this.offsets.length) this.grow(seq);
    const isNew = this.offsets[seq - 1]! < 0;
    this.offsets[seq - 1] = offset;
    this.lengths[seq - 1] = length;
    this.flags[seq - 1] = (meta.visible ? VISIBLE : 0) | (meta.person ? PERSON : 0);
    if (isNew) {
      this.present++;
      if (seq > this.top) this.top = seq;
      this.ids.add(hash32(meta.messageId), seq);
    }
    if (meta.clientMsgId !== undefined && (isNew || !this.clients.candidates(hash32(clientKey(meta.senderId, meta.clientMsgId))).includes(seq))) {
      this.clients.add(hash32(clientKey(meta.senderId, meta.clientMsgId)), seq);
    }
    const last = this.lastBySender.get(meta.senderId) ?? 0;
    if (meta.visible && seq >= last) {
      this.lastBySender.set(meta.senderId, seq);
      this.staleSenders.delete(meta.senderId);
    } else if (!meta.visible && seq === last) {
      this.staleSenders.add(meta.senderId);
    }
    if (meta.person) {
      if (seq > this.lastPerson) this.lastPerson = seq;
    } else if (seq === this.lastPerson) {
      let s = seq - 1;
      while (s >= 1 && !(this.offsets[s - 1]! >= 0 && this.flags[s - 1]! & PERSON)) s--;
      this.lastPerson = Math.max(0, s);
    }
  }

  /** Last visible seq of the sender as indexed (check `staleSenders` first). */
  lastSeqBySender(senderId: string): number {
    return this.lastBySender.get(senderId) ?? 0;
  }

  lastPersonSeq(): number {
    return this.lastPerson;
  }

  isVisible(seq: number): boolean {
    return this.has(seq) && (this.flags[seq - 1]! & VISIBLE) !== 0;
  }

  /** Seqs that may hold the message id (compare after reading). */
  seqsOfId(messageId: string): number[] {
    return this.ids.candidates(hash32(messageId));
  }

  /** Seqs that may hold the sender's client_msg_id (compare after reading). */
  seqsOfClient(senderId: string, clientMsgId: string): number[] {
    return this.clients.candidates(hash32(clientKey(senderId, clientMsgId)));
  }

  /** Present seqs of a page: > afterSeq ascending, or the newest < beforeSeq, or both bounds. */
  page(afterSeq: number | undefined, beforeSeq: number | undefined, limit: number): number[] {
    const n = Math.max(0, Math.floor(limit));
    const out: number[] = [];
    if (n === 0) return out;
    const end = Math.min(this.top, beforeSeq !== undefined ? Math.ceil(beforeSeq) - 1 : this.top);
    if (afterSeq !== undefined) {
      for (let s = Math.max(1, Math.floor(afterSeq) + 1); s <= end && out.length < n; s++) if (this.has(s)) out.push(s);
      return out;
    }
    for (let s = end; s >= 1 && out.length < n; s--) if (this.has(s)) out.push(s);
    return out.reverse();
  }

  private grow(seq: number): void {
    let size = this.offsets.length;
    while (size < seq) size *= 2;
    const offsets = new Float64Array(size).fill(-1);
    offsets.set(this.offsets);
    const lengths = new Uint32Array(size);
    lengths.set(this.lengths);
    const flags = new Uint8Array(size);
    flags.set(this.flags);
    this.offsets = offsets;
    this.lengths = lengths;
    this.flags = flags;
  }
}
