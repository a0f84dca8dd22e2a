// What the store keeps in memory about one room's messages, without the messages: for each seq
// the byte offset and length of its latest version's line in the log, two flag bits, and small
// tables to find a seq by message id or by (sender, client_msg_id). About 30 bytes a message,
// kept only for the rooms in use (room-messages.ts drops the least recently used within
// INDEX_CACHE_BYTES); the messages themselves are read from the log on demand (log-reader.ts)
// and the recent ones kept in the store's cache (message-cache.ts).
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
  // The id and client tables: undefined while a persisted index's tables are not read yet
  // (`loadTables`); a page, search or get_context needs only the arrays above.
  private ids: SeqTable | undefined = new SeqTable();
  private clients: SeqTable | undefined = new SeqTable();
  private tablesLoader: (() => Promise<{ ids: SeqTable; clients: SeqTable }>) | undefined;
  private tablesLoading: Promise<void> | undefined;
  private readonly lastBySender = new Map<string, number>();
  /** Senders whose last visible message became invisible: answer from disk (see file-store). */
  readonly staleSenders = new Set<string>();
  private lastPerson = 0;
  private top = 0;
  private present = 0;
  /** Visible messages in all, counted on first use (`countVisible`), then kept by `add`. -1: not yet. */
  private visibleTotal = -1;
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
    return this.offsets.byteLength + this.lengths.byteLength + this.flags.byteLength + (this.ids?.bytes ?? 0) + (this.clients?.bytes ?? 0);
  }

  /** Whether the id and client tables are in memory (needed by `add`, `seqsOfId`, `seqsOfClient`). */
  get tablesLoaded(): boolean {
    return this.ids !== undefined && this.clients !== undefined;
  }

  /** Reads the id and client tables of an index loaded without them (once; a failure is retried). */
  loadTables(): Promise<void> {
    if (this.tablesLoaded) return Promise.resolve();
    this.tablesLoading ??= this.tablesLoader!().then(
      ({ ids, clients }) => {
        this.ids = ids;
        this.clients = clients;
        this.tablesLoader = undefined;
      },
      (err: unknown) => {
        this.tablesLoading = undefined;
        throw err;
      },
    );
    return this.tablesLoading;
  }

  /** An index whose tables are read on first need by `loader` (a persisted index, index-files.ts). */
  deferTables(loader: () => Promise<{ ids: SeqTable; clients: SeqTable }>): void {
    this.ids = undefined;
    this.clients = undefined;
    this.tablesLoader = loader;
  }

  /** The id and client tables (an index built by a scan, to complete one whose tables were lost). */
  tables(): { ids: SeqTable; clients: SeqTable } {
    return { ids: this.idTable(), clients: this.clientTable() };
  }

  /** The id table's hash slots (0 = empty), for the store's id directory (id-directory.ts). */
  idHashes(): Int32Array {
    return this.idTable().export().keys;
  }

  private idTable(): SeqTable {
    if (!this.ids) throw new Error('room index: id table not loaded');
    return this.ids;
  }

  private clientTable(): SeqTable {
    if (!this.clients) throw new Error('room index: client table not loaded');
    return this.clients;
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
    const ids = this.idTable();
    const clients = this.clientTable();
    this.dirty = true;
    if (seq > this.offsets.length) this.grow(seq);
    const isNew = this.offsets[seq - 1]! < 0;
    if (this.visibleTotal >= 0) this.visibleTotal += (meta.visible ? 1 : 0) - (this.flags[seq - 1]! & VISIBLE);
    this.offsets[seq - 1] = offset;
    this.lengths[seq - 1] = length;
    this.flags[seq - 1] = (meta.visible ? VISIBLE : 0) | (meta.person ? PERSON : 0);
    if (isNew) {
      this.present++;
      if (seq > this.top) this.top = seq;
      ids.add(hash32(meta.messageId), seq);
    }
    if (meta.clientMsgId !== undefined && (isNew || !clients.candidates(hash32(clientKey(meta.senderId, meta.clientMsgId))).includes(seq))) {
      clients.add(hash32(clientKey(meta.senderId, meta.clientMsgId)), seq);
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

  /**
   * Visible messages with afterSeq < seq < beforeSeq, from the flags alone (get_context's
   * `omitted`: reading them from the log to count them cost seconds a call in a room of
   * millions). Scans the shorter side: the range, or what lies outside it taken from the total.
   */
  countVisible(afterSeq: number, beforeSeq: number): number {
    const from = Math.max(0, Math.floor(afterSeq)); // flags[seq - 1]: the first counted is afterSeq + 1
    const to = Math.min(this.top, Math.ceil(beforeSeq) - 1); // exclusive: the last counted is beforeSeq - 1
    if (to <= from) return 0;
    if (to - from <= this.top / 2) return this.visibleIn(from, to);
    if (this.visibleTotal < 0) this.visibleTotal = this.visibleIn(0, this.top);
    return this.visibleTotal - this.visibleIn(0, from) - this.visibleIn(to, this.top);
  }

  private visibleIn(start: number, end: number): number {
    const flags = this.flags;
    let n = 0;
    for (let i = start; i < end; i++) n += flags[i]! & VISIBLE;
    return n;
  }

  /** Seqs that may hold the message id (compare after reading). */
  seqsOfId(messageId: string, hash = hash32(messageId)): number[] {
    const ids = this.idTable();
    return ids.has(hash) ? ids.candidates(hash) : [];
  }

  /** Seqs that may hold the sender's client_msg_id (compare after reading). */
  seqsOfClient(senderId: string, clientMsgId: string): number[] {
    return this.clientTable().candidates(hash32(clientKey(senderId, clientMsgId)));
  }

  /** The highest log offset below `under` of the latest line of a seq below `seq` (-1 if none). */
  maxOffsetBelow(seq: number, under = Infinity): number {
    let max = -1;
    const end = Math.min(seq - 1, this.top);
    for (let s = 0; s < end; s++) {
      const offset = this.offsets[s]!;
      if (offset > max && offset < under) max = offset;
    }
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
   * The index as bytes, for `indexes/{room_id}.idx`: a JSON header line, then the arrays —
   * the core (offsets, lengths, flags: what a page, search or get_context needs), then the id and
   * client tables — each part with its own CRC-32, so a room's first read loads and checks the
   * core alone (index-files.ts) and the tables follow when something needs them.
   * `coveredSize` is the log size the index describes; `fingerprint` identifies the log's bytes
   * just before it (both checked before the file is trusted, see file-store.ts).
   */
  serialize(coveredSize: number, fingerprint: string): Buffer {
    const ids = this.idTable().export();
    const clients = this.clientTable().export();
    const header = {
      v: 3,
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
    const bytesOf = (a: ArrayBufferView): Buffer => Buffer.from(a.buffer, a.byteOffset, a.byteLength);
    const core = [this.offsets, this.lengths, this.flags].map(bytesOf);
    const tables = [ids.keys, ids.seqs, clients.keys, clients.seqs].map(bytesOf);
    // Checksums of the arrays: the file is a cache written without fsync, so a crash soon after
    // may leave it with the right length and the wrong bytes. CRC-32 (native, several GB/s).
    const sum = (parts: Buffer[]): number => parts.reduce((crc, part) => crc32(part, crc), 0);
    let head = JSON.stringify({ ...header, crc32Core: sum(core), crc32Tables: sum(tables) });
    // Padded so the arrays start 8-byte aligned in the file: they are then used in place.
    head += ' '.repeat((8 - ((Buffer.byteLength(head) + 1) % 8)) % 8);
    return Buffer.concat([Buffer.from(head + '\n', 'utf8'), ...core, ...tables]);
  }

  /** The header line of an `.idx` (`buf` holds at least its first `end` bytes, `end` its newline). */
  static parseHeader(buf: Buffer, end: number): IndexHeader {
    const h = JSON.parse(buf.toString('utf8', 0, end)) as IndexHeader;
    if (typeof h !== 'object' || h === null || !Number.isInteger(h.cap) || h.cap < 0 || !Array.isArray(h.ids) || !Array.isArray(h.clients)) {
      throw new Error('bad header');
    }
    return h;
  }

  /** Bytes of the core arrays and of the tables that follow the header. */
  static partBytes(h: IndexHeader): { core: number; tables: number } {
    return { core: h.cap * 13, tables: (h.ids[0] + h.clients[0]) * 8 };
  }

  /**
   * The index from its header and core bytes (v3, checked here unless `checked`: the caller
   * verified them); its tables come later.
   */
  static fromCore(h: IndexHeader, core: Buffer, checked = false): RoomIndex {
    if (core.length !== RoomIndex.partBytes(h).core) throw new Error('truncated');
    if (!checked && h.v !== 3) throw new Error(`version ${h.v}`);
    if (!checked && crc32(core) !== h.crc32Core) throw new Error('checksum');
    const read = reader(core);
    const index = new RoomIndex();
    index.offsets = read(Float64Array, h.cap);
    index.lengths = read(Uint32Array, h.cap);
    index.flags = read(Uint8Array, h.cap);
    index.ids = undefined;
    index.clients = undefined;
    index.top = h.top;
    index.present = h.present;
    index.lastPerson = h.lastPerson;
    for (const [sender, seq] of h.senders) index.lastBySender.set(sender, seq);
    for (const sender of h.stale) index.staleSenders.add(sender);
    index.dirty = false;
    return index;
  }

  /** The id and client tables from their bytes (v3, checked here). */
  static tablesFrom(h: IndexHeader, bytes: Buffer, checked = false): { ids: SeqTable; clients: SeqTable } {
    if (bytes.length !== RoomIndex.partBytes(h).tables) throw new Error('truncated');
    if (!checked && crc32(bytes) !== h.crc32Tables) throw new Error('checksum');
    const read = reader(bytes);
    return {
      ids: SeqTable.import(read(Int32Array, h.ids[0]), read(Int32Array, h.ids[0]), h.ids[1]),
      clients: SeqTable.import(read(Int32Array, h.clients[0]), read(Int32Array, h.clients[0]), h.clients[1]),
    };
  }

  /**
   * Reads a whole `.idx` of a previous format (v1 with a SHA-1, v2 with one CRC-32 over all the
   * arrays; a v3 file is read in parts, index-files.ts), verifying its checksum once; throws if
   * it is not whole. The index is marked changed, so a clean shutdown writes it again as v3.
   */
  static fromOlderFormat(buf: Buffer): { index: RoomIndex; size: number; fingerprint: string } {
    const nl = buf.indexOf(0x0a);
    if (nl < 0) throw new Error('no header');
    const h = RoomIndex.parseHeader(buf, nl);
    if (h.v !== 1 && h.v !== 2) throw new Error(`version ${h.v}`);
    const body = buf.subarray(nl + 1);
    const { core, tables } = RoomIndex.partBytes(h);
    if (body.length !== core + tables) throw new Error(body.length < core + tables ? 'truncated' : 'trailing bytes');
    const sound = h.v === 1 ? createHash('sha1').update(body).digest('hex') === h.sha1 : crc32(body) === h.crc32;
    if (!sound) throw new Error('checksum');
    const index = RoomIndex.fromCore(h, body.subarray(0, core), true);
    const loaded = RoomIndex.tablesFrom(h, body.subarray(core), true);
    index.ids = loaded.ids;
    index.clients = loaded.clients;
    index.dirty = true; // written again as v3 at the next clean shutdown
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

/**
 * CRC-32 of a large buffer 1 MiB at a time, yielding to the event loop in between (the tables
 * of a big room are checked off the request path: 17 MB in one call would stall requests ~6 ms).
 */
export async function crc32Yielding(bytes: Buffer): Promise<number> {
  const step = 1024 * 1024;
  let crc = 0;
  for (let at = 0; at < bytes.length; at += step) {
    crc = crc32(bytes.subarray(at, Math.min(bytes.length, at + step)), crc);
    if (at + step < bytes.length) await new Promise<void>((resolve) => setImmediate(resolve));
  }
  return crc;
}

/** The JSON header line of an `.idx` file. */
export interface IndexHeader {
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
  crc32Core?: number;
  crc32Tables?: number;
}

type ArrayKind<T> = { new (n: number): T; new (buffer: ArrayBufferLike, offset: number, n: number): T; BYTES_PER_ELEMENT: number };

/** Reads typed arrays one after another from `buf`: views of its bytes where aligned, else copies. */
function reader(buf: Buffer) {
  let at = 0;
  return <T extends Float64Array | Uint32Array | Uint8Array | Int32Array>(Kind: ArrayKind<T>, n: number): T => {
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
}
