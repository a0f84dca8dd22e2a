// The messages of all rooms, served from the logs with bounded memory (SPEC §5: memory follows
// the working set, not the history). Per room a compact index (room-index.ts) says where the
// latest version of each seq is; one LRU cache (message-cache.ts) holds recent and recently read
// messages; everything else is read from the log by position, and search streams the log.
//
// Objects returned are the store's own (cached): the caller (file-store.ts) copies them.
import { open } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from '../logger.js';
import type { Message } from '../types.js';
import { defaultFsOps, type FsOps } from './fs-ops.js';
import { corruptAt, parseLine, readAt } from './log-reader.js';
import { candidateLines, forEachBlock, rawSafe } from './log-search.js';
import { MessageCache } from './message-cache.js';
import { RoomIndex } from './room-index.js';
import { hash32 } from './seq-table.js';

/** Reads spanning at most this many bytes are done in one positional read. */
const SPAN_BYTES = 256 * 1024;
/** The warm-up reads the index tables this long after the cores (see loadAll). */
const TABLES_AFTER_MS = 1000;
export interface RoomMessagesOptions {
  dir: string;
  logger: Logger;
  cacheMessages: number;
  /** Durable size of a room's log (reads and search never go past it). */
  sizeOf: (roomId: string) => number;
  /** Builds the index of a room registered lazily (persisted index, log tail; see file-store). */
  loadIndex: (roomId: string) => Promise<RoomIndex>;
  /** The read search streams logs through (tests count and hold reads); node's by default. */
  fsOps?: FsOps;
}

/** What is known of a room whose index is not loaded yet (from the start-up manifest). */
interface LazyRoom {
  lastSeq: number;
  count: number;
}

export class RoomMessages {
  readonly cache: MessageCache;
  private readonly indexes = new Map<string, RoomIndex>();
  /** Rooms whose index is loaded on first use (start-up does not read them). */
  private readonly lazy = new Map<string, LazyRoom>();
  private readonly loading = new Map<string, Promise<RoomIndex>>();
  private loadingAll: Promise<void> | undefined;
  private loadingCores: Promise<void> | undefined;
  private wakeWarmUp: (() => void) | undefined;
  private stopped = false;
  private readonly reported = new Set<string>();
  /**
   * Per room, the searches running over its log: each is told, for every seq replaced while it
   * runs, the offset of the seq's latest line when it started (-1 for a new seq). See search.
   */
  private readonly searching = new Map<string, Set<Map<number, number>>>();

  constructor(private readonly opts: RoomMessagesOptions) {
    this.cache = new MessageCache(opts.cacheMessages);
  }

  fileOf(roomId: string): string {
    return join(this.opts.dir, `${roomId}.jsonl`);
  }

  entries(): IterableIterator<[string, RoomIndex]> {
    return this.indexes.entries();
  }

  register(roomId: string, index: RoomIndex): void {
    this.indexes.set(roomId, index);
  }

  /** A room whose index is loaded on first use; until then its last seq and count are these. */
  registerLazy(roomId: string, lastSeq: number, count: number): void {
    this.lazy.set(roomId, { lastSeq, count });
  }

  /** Rooms not loaded yet, with what the manifest said of them (persisted again at close). */
  lazyEntries(): IterableIterator<[string, LazyRoom]> {
    return this.lazy.entries();
  }

  /** The room's index, loading it first if the room was registered lazily. */
  async ready(roomId: string): Promise<RoomIndex | undefined> {
    const index = this.indexes.get(roomId);
    if (index || !this.lazy.has(roomId)) return index;
    let loading = this.loading.get(roomId);
    if (!loading) {
      loading = this.opts.loadIndex(roomId).then((loaded) => {
        this.indexes.set(roomId, loaded);
        this.lazy.delete(roomId);
        return loaded;
      });
      this.loading.set(roomId, loading);
      void loading.then(
        () => this.loading.delete(roomId),
        () => this.loading.delete(roomId), // the next use tries again
      );
    }
    return loading;
  }

  /**
   * The room's index with its id and client tables (a persisted index is first loaded without
   * them: pages, search and get_context do not need them; ids, client ids and commits do).
   */
  async readyWithTables(roomId: string): Promise<RoomIndex | undefined> {
    const index = await this.ready(roomId);
    await index?.loadTables();
    return index;
  }

  /**
   * The background warm-up after start: every lazy room's index core, one room at a time, then
   * (after TABLES_AFTER_MS, so the first requests after a start do not share the disk and the
   * cores with them) the id and client tables of every index, one at a time.
   */
  loadAll(): Promise<void> {
    this.loadingAll ??= (async () => {
      await this.loadCores();
      // Closed while the cores loaded: `stopLoading` found no sleep to end, so take none.
      if (this.stopped) return;
      await new Promise<void>((resolve) => {
        this.wakeWarmUp = resolve;
        setTimeout(resolve, TABLES_AFTER_MS).unref();
      });
      for (const [roomId, index] of [...this.indexes]) {
        if (this.stopped) return;
        if (index.tablesLoaded) continue;
        await index.loadTables().catch((err: unknown) => {
          this.opts.logger.warn({ err, room_id: roomId }, 'loading a room\'s message index failed; its reads will try again');
        });
        await new Promise<void>((resolve) => setImmediate(resolve)); // let requests in between
      }
    })().finally(() => {
      this.loadingAll = undefined;
    });
    return this.loadingAll;
  }

  /** Loads every lazy room's index core, one at a time (what `getMessage` waits for when an id is not in a loaded room). */
  private loadCores(): Promise<void> {
    this.loadingCores ??= (async () => {
      for (const roomId of [...this.lazy.keys()]) {
        if (this.stopped) return;
        await this.ready(roomId).catch((err: unknown) => {
          this.opts.logger.warn({ err, room_id: roomId }, 'loading a room\'s message index failed; its reads will try again');
        });
        await new Promise<void>((resolve) => setImmediate(resolve)); // let requests in between
      }
    })().finally(() => {
      this.loadingCores = undefined;
    });
    return this.loadingCores;
  }

  /** Stops a running `loadAll` (the store is closing) and waits for the room it is loading. */
  async stopLoading(): Promise<void> {
    this.stopped = true;
    this.wakeWarmUp?.();
    await Promise.all([this.loadingAll, this.loadingCores]);
  }

  /** The index of a room being written (loaded: every commit with messages reads it first). */
  private index(roomId: string): RoomIndex {
    if (this.lazy.has(roomId)) throw new Error(`room ${roomId}: index not loaded before a commit`);
    let index = this.indexes.get(roomId);
    if (!index) this.indexes.set(roomId, (index = new RoomIndex()));
    return index;
  }

  get count(): number {
    let n = 0;
    for (const index of this.indexes.values()) n += index.count;
    for (const room of this.lazy.values()) n += room.count;
    return n;
  }

  get indexBytes(): number {
    let n = 0;
    for (const index of this.indexes.values()) n += index.bytes;
    return n;
  }

  lastSeq(roomId: string): number {
    return this.indexes.get(roomId)?.lastSeq ?? this.lazy.get(roomId)?.lastSeq ?? 0;
  }

  /** Makes committed, durable lines visible: index and cache, in one synchronous step. */
  apply(roomId: string, messages: readonly Message[], offsets: readonly number[], lengths: readonly number[], metas: Parameters<RoomIndex['add']>[0][]): void {
    if (messages.length === 0) return;
    const index = this.index(roomId);
    const searches = this.searching.get(roomId);
    messages.forEach((m, i) => {
      const seq = metas[i]!.seq;
      if (searches) for (const before of searches) if (!before.has(seq)) before.set(seq, index.has(seq) ? index.offsetOf(seq) : -1);
      index.add(metas[i]!, offsets[i]!, lengths[i]!);
      this.cache.set(m);
    });
  }

  /** The latest versions at the given seqs (present ones only), in the order asked. */
  async read(roomId: string, seqs: readonly number[]): Promise<Message[]> {
    const index = await this.ready(roomId);
    if (!index || seqs.length === 0) return [];
    const out: (Message | undefined)[] = seqs.map((seq) => this.cache.get(roomId, seq));
    // Only the misses get a record (a cached page — get_context's newest messages — allocates none).
    const missing: { seq: number; i: number; offset: number; length: number }[] = [];
    for (let i = 0; i < seqs.length; i++) {
      const seq = seqs[i]!;
      if (out[i] === undefined && index.has(seq)) missing.push({ seq, i, offset: index.offsetOf(seq), length: index.lengthOf(seq) });
    }
    if (missing.length > 0) {
      const file = this.fileOf(roomId);
      const handle = await open(file, 'r');
      try {
        missing.sort((a, b) => a.offset - b.offset);
        for (let k = 0; k < missing.length; ) {
          // Lines close together in the file (a page) are read with one positional read.
          let j = k + 1;
          while (j < missing.length && missing[j]!.offset + missing[j]!.length - missing[k]!.offset <= SPAN_BYTES) j++;
          const from = missing[k]!.offset;
          const to = missing[j - 1]!.offset + missing[j - 1]!.length;
          const bytes = await readAt(handle, from, to - from);
          for (let x = k; x < j; x++) {
            const { seq, i, offset, length } = missing[x]!;
            const m = this.decode(roomId, file, bytes.subarray(offset - from, offset - from + length), offset, seq);
            out[i] = m;
            // Cache only if no newer version was committed meanwhile.
            if (index.offsetOf(seq) === offset) this.cache.set(m);
          }
          k = j;
        }
      } finally {
        await handle.close();
      }
    }
    return missing.length === 0 && !out.includes(undefined) ? (out as Message[]) : out.filter((m): m is Message => m !== undefined);
  }

  private decode(roomId: string, file: string, bytes: Buffer, offset: number, seq: number): Message {
    const parsed = parseLine(bytes.toString('utf8'), roomId);
    let reason: string | undefined;
    if (typeof parsed !== 'object') reason = typeof parsed === 'string' ? parsed : 'blank line';
    else if (parsed.seq !== seq) reason = `seq ${parsed.seq} where ${seq} was indexed`;
    if (reason === undefined) return parsed as Message;
    const err = corruptAt(file, offset, reason);
    const key = `${file}:${offset}`;
    if (!this.reported.has(key)) {
      this.reported.add(key);
      this.opts.logger.error({ err, file, byte_offset: offset, room_id: roomId, seq }, 'room log is corrupt; that message cannot be read');
    }
    throw err;
  }

  async page(roomId: string, afterSeq: number | undefined, beforeSeq: number | undefined, limit: number): Promise<Message[]> {
    const index = await this.ready(roomId);
    return index ? this.read(roomId, index.page(afterSeq, beforeSeq, limit)) : [];
  }

  /**
   * The message with this id, in whichever room holds it: every loaded room's id table is probed
   * (a hash lookup, well under a microsecond a room). A room whose tables or candidate lines
   * cannot be read is passed over (logged), so only its own messages are affected: an id found
   * in another room is answered; one found nowhere rejects with the damaged room's error (it
   * may be that room's, so "not found" would be a guess).
   */
  async getMessage(messageId: string): Promise<Message | undefined> {
    const hash = hash32(messageId);
    let failure: unknown;
    const probe = async (): Promise<Message | undefined> => {
      for (const [roomId, index] of [...this.indexes]) {
        let seqs: number[];
        try {
          if (!index.tablesLoaded) await index.loadTables();
          seqs = index.seqsOfId(messageId, hash);
        } catch (err) {
          failure ??= err;
          // Once per room, not once per lookup: every get_full_message probes it.
          if (!this.reported.has(`ids:${roomId}`)) {
            this.reported.add(`ids:${roomId}`);
            this.opts.logger.error({ err, room_id: roomId }, 'a room\'s messages cannot be found by id; the other rooms are still searched');
          }
          continue;
        }
        if (seqs.length === 0) continue;
        try {
          for (const m of await this.read(roomId, seqs)) if (m.message_id === messageId) return m;
        } catch (err) {
          failure ??= err; // a corrupt candidate line, logged by `decode`
        }
      }
      return undefined;
    };
    let found = await probe();
    if (!found && this.lazy.size > 0) {
      // The id may be in a room not loaded yet: load them all (once), then look again.
      await this.loadCores();
      failure = undefined;
      found = await probe();
    }
    if (found || failure === undefined) return found;
    throw failure;
  }

  /** The stored message id at each seq (undefined where none), for commit checks. */
  async idsAt(roomId: string, seqs: readonly number[]): Promise<Map<number, string>> {
    await this.readyWithTables(roomId); // every commit asks this first: its lines are then added
    const ids = new Map<number, string>();
    for (const m of await this.read(roomId, seqs)) ids.set(m.seq, m.message_id);
    return ids;
  }

  /** Whether the room already has a message with this id (at any seq). */
  async hasId(roomId: string, messageId: string): Promise<number | undefined> {
    const index = await this.readyWithTables(roomId);
    if (!index) return undefined;
    const seqs = index.seqsOfId(messageId);
    if (seqs.length === 0) return undefined;
    return (await this.read(roomId, seqs)).find((m) => m.message_id === messageId)?.seq;
  }

  async findByClientMsgId(roomId: string, senderId: string, clientMsgId: string): Promise<Message | undefined> {
    const index = await this.readyWithTables(roomId);
    if (!index) return undefined;
    const seqs = [...new Set(index.seqsOfClient(senderId, clientMsgId))].sort((a, b) => a - b);
    return (await this.read(roomId, seqs)).find((m) => m.sender_id === senderId && m.client_msg_id === clientMsgId);
  }

  async lastPersonSeq(roomId: string): Promise<number> {
    return (await this.ready(roomId))?.lastPersonSeq() ?? 0;
  }

  async lastSeqBySender(roomId: string, senderId: string): Promise<number> {
    const index = await this.ready(roomId);
    if (!index) return 0;
    if (!index.staleSenders.has(senderId)) return index.lastSeqBySender(senderId);
    // Rare: the sender's last visible message was replaced by an invisible version. Look back.
    for (let before = index.lastSeqBySender(senderId); before > 1; ) {
      const seqs = index.page(undefined, before, 500);
      if (seqs.length === 0) break;
      const found = (await this.read(roomId, seqs)).reverse().find((m) => m.sender_id === senderId && m.visible);
      if (found) return found.seq;
      before = seqs[0]!;
    }
    return 0;
  }

  /**
   * Visible, not deleted messages whose text contains the query (case-insensitive), oldest
   * first, as they were when the search started: streams the log's bytes durable then; only
   * lines whose raw bytes may hold the query are parsed (log-search.ts), and the scan stops once
   * no line left in the log can be older than the oldest `limit` found.
   *
   * A line counts if it was its seq's latest when the search started. A message edited while the
   * search runs has its new line past the bytes scanned, and its old line no longer indexed:
   * `apply` records the old offset for the running searches, so the message is found once, in
   * that version (SPEC is silent on this; the choice is in docs/storage.md).
   */
  async search(roomId: string, query: string, limit: number): Promise<Message[]> {
    const index = await this.ready(roomId);
    const size = this.opts.sizeOf(roomId);
    if (!index || size === 0 || limit <= 0) return [];
    const replaced = new Map<number, number>();
    const searches = this.searching.get(roomId) ?? new Set();
    this.searching.set(roomId, searches.add(replaced));
    try {
      return await this.scan(roomId, index, size, replaced, query.toLowerCase(), limit);
    } finally {
      searches.delete(replaced);
      if (searches.size === 0) this.searching.delete(roomId);
    }
  }

  private async scan(roomId: string, index: RoomIndex, size: number, replaced: ReadonlyMap<number, number>, needle: string, limit: number): Promise<Message[]> {
    const candidates = candidateLines(needle);
    // A query JSON writes escaped (quote, backslash, control character) is not in the raw line.
    const raw = rawSafe(needle);
    /** The offset of the seq's latest line when the search started. */
    const latestAtStart = (seq: number): number => replaced.get(seq) ?? index.offsetOf(seq);
    let found: Message[] = [];
    let newestKept = 0;
    let latestLineBelow = 0; // the highest start offset of a latest version older than newestKept
    const read = (this.opts.fsOps ?? defaultFsOps).read;
    await forEachBlock(this.fileOf(roomId), size, (block, base) => {
      candidates(block, (start, end) => {
        const text = block.toString('utf8', start, end);
        if (raw && !text.toLowerCase().includes(needle)) return;
        const m = parseLine(text, roomId);
        if (typeof m !== 'object') return; // reported when read
        if (latestAtStart(m.seq) !== base + start) return; // an older version
        if (!m.visible || m.deleted || !m.text_content.toLowerCase().includes(needle)) return;
        found.push(m);
        if (found.length > limit * 2) found = keepOldest(found, limit);
      });
      if (found.length < limit) return true;
      found = keepOldest(found, limit);
      // Done if every seq older than the newest kept has its latest line before this point.
      // Lines at or past `size` were written since the start: the replaced seqs' start offsets
      // stand for them (fixed once recorded, so the maximum stays valid while `newest` does).
      const newest = found[found.length - 1]!.seq;
      if (newest !== newestKept) {
        newestKept = newest;
        latestLineBelow = index.maxOffsetBelow(newest, size);
        for (const [seq, offset] of replaced) if (seq < newest && offset > latestLineBelow) latestLineBelow = offset;
      }
      return latestLineBelow >= base + block.length;
    }, read);
    return keepOldest(found, limit);
  }
}

function keepOldest(messages: Message[], limit: number): Message[] {
  return messages.sort((a, b) => a.seq - b.seq).slice(0, limit);
}
