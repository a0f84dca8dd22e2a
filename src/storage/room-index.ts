// What the store keeps in memory about one room's messages, without the messages: for each seq
// the byte offset and length of its latest version's line in the log, two flag bits, and small
// tables to find a seq by message id or by (sender, client_msg_id). About 30 bytes a message,
// so 10,000,000 messages fit in a few hundred MB; the messages themselves are read from the log
// on demand (log-reader.ts) and the recent ones kept in the store's cache (message-cache.ts).
//
// The per-sender and per-person answers the runtime asks on every call are kept up to date by
// every line added: `lastSeqBySender` is a map of the room's senders, `lastPersonSeq` a number.
import { createHash } from 'node:crypto';
import { crc32 } from 'node:zlib';
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
  private ids = new SeqTable();
  private clients = new SeqTable();
  private readonly lastBySender = new Map<string, number>();
  /** Senders whose last visible message became invisible: answer from disk (see file-store). */
  readonly staleSenders = new Set<string>();
  private lastPerson = 0;
  private top = 0;
  private present = 0;
  /** Changed since it was loaded from (or last written to) its persisted file. */
  dirty = true;

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
    this.dirty = true;
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
  seqsOfId(messageId: string, hash = hash32(messageId)): number[] {
    return this.ids.has(hash) ? this.ids.candidates(hash) : [];
  }

  /** Seqs that may hold the sender's client_msg_id (compare after reading). */
  seqsOfClient(senderId: string, clientMsgId: string): number[] {
    return this.clients.candidates(hash32(clientKey(senderId, clientMsgId)));
  }

  /** The highest log offset of the latest line of a seq below `seq` (-1 if none). */
  maxOffsetBelow(seq: number): number {
    let max = -1;
    const end = Math.min(seq - 1, this.top);
    for (let s = 0; s < end; s++) if (this.offsets[s]! > max) max = this.offsets[s]!;
    return max;
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

  /**
   * The index as bytes, for `room_messages/{room_id}.idx`: a JSON header line, then the arrays.
   * `coveredSize` is the log size the index describes; `fingerprint` identifies the log's bytes
   * just before it (both checked before the file is trusted, see file-store.ts).
   */
  serialize(coveredSize: number, fingerprint: string): Buffer {
    const ids = this.ids.export();
    const clients = this.clients.export();
    const header = {
      v: 2,
      size: coveredSize,
      fingerprint,
      top: this.top,
      present: this.present,
      lastPerson: this.lastPerson,
      cap: this.offsets.length,
      ids: [ids.keys.length, ids.used],
      clients: [clients.keys.length, clients.used],
      senders: [...this.lastBySender],
      stale: [...this.staleSenders],
    };
    const parts = [this.offsets, this.lengths, this.flags, ids.keys, ids.seqs, clients.keys, clients.seqs].map((a) =>
      Buffer.from(a.buffer, a.byteOffset, a.byteLength),
    );
    // A checksum of the arrays: the file is a cache written without fsync, so a crash soon
    // after may leave it with the right length and the wrong bytes. CRC-32 (native, several
    // GB/s) rather than SHA-1: a 3,000,000-message room's index is 121 MB, read on first use.
    let sum = 0;
    for (const part of parts) sum = crc32(part, sum);
    let head = JSON.stringify({ ...header, crc32: sum });
    // Padded so the arrays start 8-byte aligned in the file: they are then used in place.
    head += ' '.repeat((8 - ((Buffer.byteLength(head) + 1) % 8)) % 8);
    return Buffer.concat([Buffer.from(head + '\n', 'utf8'), ...parts]);
  }

  /** Reads what `serialize` wrote; throws if it is not whole. */
  static deserialize(buf: Buffer): { index: RoomIndex; size: number; fingerprint: string } {
    const nl = buf.indexOf(0x0a);
    if (nl < 0) throw new Error('no header');
    const h = JSON.parse(buf.toString('utf8', 0, nl)) as {
      v: number;
      size: number;
      fingerprint: string;
      top: number;
      present: number;
      lastPerson: number;
      cap: number;
      ids: [number, number];
      clients: [number, number];
      senders: [string, number][];
      stale: string[];
      sha1?: string;
      crc32?: number;
    };
    const body = buf.subarray(nl + 1);
    if (h.v === 1) {
      if (createHash('sha1').update(body).digest('hex') !== h.sha1) throw new Error('checksum');
    } else if (h.v !== 2 || crc32(body) !== h.crc32) {
      throw new Error(h.v === 2 ? 'checksum' : `version ${h.v}`);
    }
    let at = nl + 1;
    // Each array is a view of the file's bytes where they are aligned (v2 files), else a copy.
    const take = <T extends Float64Array | Uint32Array | Uint8Array | Int32Array>(
      Kind: { new (n: number): T; new (buffer: ArrayBufferLike, offset: number, n: number): T; BYTES_PER_ELEMENT: number },
      n: number,
    ): T => {
      const bytes = n * Kind.BYTES_PER_ELEMENT;
      if (at + bytes > buf.length) throw new Error('truncated');
      const offset = buf.byteOffset + at;
      let arr: T;
      if (offset % Kind.BYTES_PER_ELEMENT === 0) arr = new Kind(buf.buffer, offset, n);
      else {
        arr = new Kind(n);
        new Uint8Array(arr.buffer).set(buf.subarray(at, at + bytes));
      }
      at += bytes;
      return arr;
    };
    const index = new RoomIndex();
    index.offsets = take(Float64Array, h.cap);
    index.lengths = take(Uint32Array, h.cap);
    index.flags = take(Uint8Array, h.cap);
    index.ids = SeqTable.import(take(Int32Array, h.ids[0]), take(Int32Array, h.ids[0]), h.ids[1]);
    index.clients = SeqTable.import(take(Int32Array, h.clients[0]), take(Int32Array, h.clients[0]), h.clients[1]);
    if (at !== buf.length) throw new Error('trailing bytes');
    index.top = h.top;
    index.present = h.present;
    index.lastPerson = h.lastPerson;
    for (const [sender, seq] of h.senders) index.lastBySender.set(sender, seq);
    for (const sender of h.stale) index.staleSenders.add(sender);
    index.dirty = false;
    return { index, size: h.size, fingerprint: h.fingerprint };
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
