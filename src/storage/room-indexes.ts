// The per-room message indexes of the file store (room-messages.ts serves the reads over
// them): which rooms' indexes are loaded (least recently used dropped past a budget, `trim`),
// which are known only by their last seq and count until first use (`lazy`), the message id
// directory and its background warm-up (`loadAll`), and how durable lines become visible
// (`apply` for a commit, `install` for a new room's history built off to the side).
import { join } from 'node:path';
import type { Logger } from '../logger.js';
import type { Message } from '../types.js';
import { defaultFsOps, type FsOps } from './fs-ops.js';
import { MessageCache } from './message-cache.js';
import { MessageIdDirectory } from './id-directory.js';
import { RoomIndex, type LineMeta } from './room-index.js';
import { hash32 } from './seq-table.js';

/** A new room's newest messages put in the cache when it is installed with its history (an import). */
const CACHED_ON_INSTALL = 1000;
/** The warm-up works this long, then rests as long (see loadAll). */
const WARM_UP_BUSY_MS = 5;

export interface RoomMessagesOptions {
  dir: string;
  logger: Logger;
  cacheMessages: number;
  /** Durable size of a room's log (reads and search never go past it). */
  sizeOf: (roomId: string) => number;
  /** Builds the index of a room registered lazily (persisted index, log tail; see file-store). */
  loadIndex: (roomId: string) => Promise<RoomIndex>;
  /** The id table's hash slots of a room not loaded, from its `.idx` alone, if that is sound. */
  loadIdHashes?: (roomId: string) => Promise<{ hashes: Int32Array; lastPersonSeq: number } | undefined>;
  /** The read search streams logs through (tests count and hold reads); node's by default. */
  fsOps?: FsOps;
  /** Bytes of loaded indexes kept beyond the one in use (INDEX_CACHE_BYTES; see `trim`). */
  indexBudgetBytes: number;
  /** Whether a commit of the room is in progress (its index must stay until it is applied). */
  isBusy?: (roomId: string) => boolean;
}

/** What is known of a room whose index is not loaded yet (from the start-up manifest). */
export interface LazyRoom {
  lastSeq: number;
  count: number;
  /** Known from the manifest or from the index when it was dropped (older manifests: not). */
  lastPersonSeq?: number;
}

export abstract class RoomIndexes {
  readonly cache: MessageCache;
  /** Loaded indexes, least recently used first (a use moves a room to the end). */
  protected readonly indexes = new Map<string, RoomIndex>();
  /** Each loaded index's bytes when last counted, and their sum (what `trim` compares). */
  private readonly counted = new Map<string, number>();
  private countedBytes = 0;
  /** getMessage calls waiting for the warm-up (it does not rest meanwhile). */
  protected lookupsWaiting = 0;
  /** Rooms whose index is not in memory: not loaded since start, or dropped (see `trim`). */
  protected readonly lazy = new Map<string, LazyRoom>();
  private readonly loading = new Map<string, Promise<RoomIndex>>();
  /** Which rooms may hold a message id (getMessage). */
  protected readonly ids = new MessageIdDirectory();
  /** Rooms whose new ids `apply` adds to the directory (their older ones are in, or going in). */
  private readonly idsTracked = new Set<string>();
  /** Rooms whose ids are all in the directory. */
  private readonly idsKnown = new Set<string>();
  /** When each loaded room was last used by a read or a commit (a tick, not a time). */
  private readonly lastUse = new Map<string, number>();
  private useTick = 0;
  private learningAll: Promise<void> | undefined;
  private stopped = false;
  protected readonly reported = new Set<string>();
  /**
   * Per room, the searches running over its log: each is told, for every seq replaced while it
   * runs, the offset of the seq's latest line when it started (-1 for a new seq). See search.
   */
  protected readonly searching = new Map<string, Set<Map<number, number>>>();

  /** Positional reads of the logs (reads and search; tests fail and count them). */
  protected readonly readFile: FsOps['read'];

  constructor(protected readonly opts: RoomMessagesOptions) {
    this.cache = new MessageCache(opts.cacheMessages);
    this.readFile = (opts.fsOps ?? defaultFsOps).read;
  }

  fileOf(roomId: string): string {
    return join(this.opts.dir, `${roomId}.jsonl`);
  }

  entries(): IterableIterator<[string, RoomIndex]> {
    return this.indexes.entries();
  }

  /** A room indexed at start-up (scanned); its ids go into the directory now if its tables are in. */
  register(roomId: string, index: RoomIndex): void {
    this.indexes.set(roomId, index);
    this.recount(roomId, index);
    if (index.tablesLoaded) this.learn(roomId, index);
  }

  /** A room whose index is loaded on first use; until then its last seq and count are these. */
  registerLazy(roomId: string, lastSeq: number, count: number, lastPersonSeq?: number): void {
    this.lazy.set(roomId, { lastSeq, count, ...(lastPersonSeq !== undefined ? { lastPersonSeq } : {}) });
  }

  /** Rooms not loaded (not yet, or dropped again), with their last seq and count (persisted at close). */
  lazyEntries(): IterableIterator<[string, LazyRoom]> {
    return this.lazy.entries();
  }

  /**
   * The room's index, loading it first if it is not in memory. `use`: a read or a commit (the
   * room becomes the most recently used); the warm-up passes false.
   */
  async ready(roomId: string, use = true): Promise<RoomIndex | undefined> {
    const index = this.indexes.get(roomId);
    if (index) {
      if (use) this.touch(roomId, index);
      return index;
    }
    if (!this.lazy.has(roomId)) return undefined;
    let loading = this.loading.get(roomId);
    if (!loading) {
      loading = this.opts.loadIndex(roomId).then((loaded) => {
        this.indexes.set(roomId, loaded);
        this.recount(roomId, loaded);
        this.lazy.delete(roomId);
        return loaded;
      });
      this.loading.set(roomId, loading);
      void loading.then(
        () => this.loading.delete(roomId),
        () => this.loading.delete(roomId), // the next use tries again
      );
    }
    const loaded = await loading;
    // The warm-up's loads neither count as a use nor make room for themselves (they would push
    // out the rooms in use): it drops what it loaded itself (`learnRoom`).
    if (!use) return loaded;
    // Loaded by another caller and dropped again meanwhile: this caller's use counts on it.
    if (!this.indexes.has(roomId) && this.lazy.has(roomId)) return this.ready(roomId, use);
    this.touch(roomId, loaded);
    this.trim(roomId);
    return loaded;
  }

  /**
   * The room's index with its tables when both are in memory already (a commit's usual case), as
   * a use; undefined otherwise (then `readyWithTables`). Spares the commit path its awaits.
   */
  withTablesNow(roomId: string): RoomIndex | undefined {
    const index = this.indexes.get(roomId);
    if (!index?.tablesLoaded) return undefined;
    this.touch(roomId, index);
    return index;
  }

  /**
   * The room's index with its id and client tables (a persisted index is first loaded without
   * them: pages, search and get_context do not need them; ids, client ids and commits do).
   */
  async readyWithTables(roomId: string, use = true): Promise<RoomIndex | undefined> {
    const index = await this.ready(roomId, use);
    if (index && !index.tablesLoaded) {
      await index.loadTables();
      if (this.indexes.get(roomId) === index) this.recount(roomId, index);
      if (use) this.trim(roomId);
    }
    return index;
  }

  private touch(roomId: string, index: RoomIndex): void {
    this.indexes.delete(roomId);
    this.indexes.set(roomId, index);
    this.lastUse.set(roomId, ++this.useTick);
  }

  /**
   * Drops the least recently used indexes until the loaded ones fit the budget (`keep`, the room
   * just used, stays even if it alone does not). Only an index that still describes its log
   * exactly as its persisted `.idx` does (not changed since it was loaded: `dirty` false) is
   * dropped — it is then read again from that file on its next use — and never one of a room
   * with a commit in progress. A room written since start keeps its index until shutdown
   * persists it (docs/storage.md).
   */
  private trim(keep?: string): void {
    // The running total (`drop` keeps it), not a sum over every loaded index: trim runs on every use.
    for (const [roomId, index] of this.indexes) {
      if (this.countedBytes <= this.opts.indexBudgetBytes) break;
      if (roomId !== keep && this.droppable(roomId, index)) this.drop(roomId, index);
    }
  }

  private droppable(roomId: string, index: RoomIndex): boolean {
    return !index.dirty && index.count > 0 && !(this.opts.isBusy?.(roomId) ?? false);
  }

  private drop(roomId: string, index: RoomIndex): void {
    this.indexes.delete(roomId);
    this.countedBytes -= this.counted.get(roomId) ?? 0;
    this.counted.delete(roomId);
    this.lastUse.delete(roomId);
    this.lazy.set(roomId, { lastSeq: index.lastSeq, count: index.count, lastPersonSeq: index.lastPersonSeq() });
  }

  /** Puts a room's message ids into the directory at once (start-up; later ones: `apply`). */
  private learn(roomId: string, index: RoomIndex): void {
    if (this.idsTracked.has(roomId)) return;
    this.ids.addRoom(roomId, index.idHashes());
    this.idsTracked.add(roomId);
    this.idsKnown.add(roomId);
  }

  /**
   * `learn` a slice at a time (the warm-up: a big room's table is millions of slots). The room
   * is tracked from the start, so ids committed meanwhile are added by `apply` (one that lands
   * in a slot not read yet is added twice: harmless); it counts as known once all are in.
   */
  private async learnYielding(roomId: string, hashes: Int32Array): Promise<void> {
    if (this.idsTracked.has(roomId)) return;
    this.idsTracked.add(roomId);
    await this.ids.addRoomYielding(roomId, hashes);
    this.idsKnown.add(roomId);
  }

  /**
   * Reads a room's id table into the directory; a room no read or commit has used (loaded for
   * this, or at start-up) is dropped again, if it can be.
   */
  private async learnRoom(roomId: string): Promise<void> {
    const usedAt = this.lastUse.get(roomId);
    if (this.lazy.has(roomId) && this.opts.loadIdHashes) {
      // A room not in memory: its `.idx` id table alone (not its core), if that file is sound.
      const read = await this.opts.loadIdHashes(roomId);
      // Still not loaded: no commit was applied to it, so the file's ids are all its ids, and its
      // last person seq is the file's (a manifest of an older release did not carry it).
      if (read && !this.indexes.has(roomId)) {
        const lazy = this.lazy.get(roomId);
        if (lazy && lazy.lastPersonSeq === undefined && Number.isInteger(read.lastPersonSeq)) lazy.lastPersonSeq = read.lastPersonSeq;
        return this.learnYielding(roomId, read.hashes);
      }
    }
    for (;;) {
      const index = await this.readyWithTables(roomId, false);
      if (!index || this.idsTracked.has(roomId)) break;
      const current = this.indexes.get(roomId);
      // Dropped and loaded again while the tables were read: learn from the loaded one (a
      // commit may have added to it; `apply` adds ids only of rooms already tracked).
      if (current !== undefined && current !== index) continue;
      // Not loaded any more: dropped clean, so `index` still describes the log.
      await this.learnYielding(roomId, index.idHashes());
      break;
    }
    // Loaded only for this, or at start-up (a scanned room), and not used by any request yet.
    const index = this.indexes.get(roomId);
    if (index && usedAt === undefined && this.lastUse.get(roomId) === undefined && this.droppable(roomId, index)) this.drop(roomId, index);
  }

  /**
   * Whether some room's ids are not in the directory yet, without walking the rooms (every
   * get_full_message of an unknown id asks): every room is either loaded or lazy, and the known
   * ones are among them.
   */
  protected get someUnlearned(): boolean {
    return this.idsKnown.size < this.lazy.size + this.indexes.size;
  }

  /** Rooms whose ids are not in the directory yet. */
  protected unlearned(): string[] {
    const out: string[] = [];
    for (const roomId of this.lazy.keys()) if (!this.idsKnown.has(roomId)) out.push(roomId);
    for (const roomId of this.indexes.keys()) if (!this.idsKnown.has(roomId)) out.push(roomId);
    return out;
  }

  /**
   * The background warm-up after start: reads every room's id table (from its `.idx`, or a scan
   * of its log) into the id directory, one room at a time, keeping no index it loaded for this
   * (see `learnRoom`). Also what `getMessage` waits for when an id is in no learned room.
   */
  loadAll(): Promise<void> {
    this.learningAll ??= (async () => {
      const started = Date.now();
      const rooms = this.unlearned();
      let turnStarted = performance.now();
      for (const roomId of rooms) {
        if (this.stopped) return;
        await this.learnRoom(roomId).catch((err: unknown) => this.reportIdsFailure(roomId, err));
        // Let requests in between; past WARM_UP_BUSY_MS of warm-up, rest as long: the warm-up
        // then takes at most about half of the time, not every free moment (10,000 rooms of
        // ids are seconds of CPU that requests arriving meanwhile would queue behind).
        // A lookup waiting for the warm-up (getMessage) takes the rests away.
        if (performance.now() - turnStarted < WARM_UP_BUSY_MS || this.lookupsWaiting > 0) await new Promise<void>((resolve) => setImmediate(resolve));
        else {
          await new Promise<void>((resolve) => setTimeout(resolve, WARM_UP_BUSY_MS));
          turnStarted = performance.now();
        }
      }
      if (rooms.length > 0) {
        this.opts.logger.info({ rooms: rooms.length, id_directory_bytes: this.ids.bytes, index_bytes: this.indexBytes, ms: Date.now() - started }, 'message ids of the rooms read into the id directory');
      }
    })().finally(() => {
      this.learningAll = undefined;
    });
    return this.learningAll;
  }

  /** Stops a running `loadAll` (the store is closing) and waits for the room it is loading. */
  async stopLoading(): Promise<void> {
    this.stopped = true;
    await this.learningAll;
  }

  /** Once per room, not once per lookup: every get_full_message of an unknown id tries it. */
  protected reportIdsFailure(roomId: string, err: unknown): void {
    if (this.reported.has(`ids:${roomId}`)) return;
    this.reported.add(`ids:${roomId}`);
    this.opts.logger.error({ err, room_id: roomId }, 'a room\'s messages cannot be found by id; the other rooms are still searched');
  }

  /** The index of a room being written (loaded: every commit with messages reads it first). */
  private index(roomId: string): RoomIndex {
    if (this.lazy.has(roomId)) throw new Error(`room ${roomId}: index not loaded before a commit`);
    let index = this.indexes.get(roomId);
    if (!index) {
      // A room created since start: its ids are all added by `apply`.
      this.indexes.set(roomId, (index = new RoomIndex()));
      this.recount(roomId, index);
      this.idsTracked.add(roomId);
      this.idsKnown.add(roomId);
    }
    return index;
  }

  get count(): number {
    let n = 0;
    for (const index of this.indexes.values()) n += index.count;
    for (const room of this.lazy.values()) n += room.count;
    return n;
  }

  /** Bytes of the loaded indexes (what the budget bounds), summed anew (tests, logs). */
  get indexBytes(): number {
    let n = 0;
    for (const index of this.indexes.values()) n += index.bytes;
    return n;
  }

  /** Bytes of the id directory (about 6 a message). */
  get idDirectoryBytes(): number {
    return this.ids.bytes;
  }

  /** Rooms whose message ids are in the directory. */
  get roomsWithIdsKnown(): number {
    return this.idsKnown.size;
  }

  lastSeq(roomId: string): number {
    return this.indexes.get(roomId)?.lastSeq ?? this.lazy.get(roomId)?.lastSeq ?? 0;
  }

  /** Makes committed, durable lines visible: index, id directory and cache, in one synchronous step. */
  apply(roomId: string, messages: readonly Message[], offsets: readonly number[], lengths: readonly number[], metas: LineMeta[]): void {
    if (messages.length === 0) return;
    const index = this.index(roomId);
    const searches = this.searching.get(roomId);
    const known = this.idsTracked.has(roomId);
    messages.forEach((m, i) => {
      const seq = metas[i]!.seq;
      const isNew = !index.has(seq);
      if (searches) for (const before of searches) if (!before.has(seq)) before.set(seq, isNew ? -1 : index.offsetOf(seq));
      index.add(metas[i]!, offsets[i]!, lengths[i]!);
      // A new version keeps its seq's id (checked by the commit): only new seqs add one.
      if (isNew && known) this.ids.add(hash32(m.message_id), roomId);
      this.cache.set(m);
    });
    this.recount(roomId, index);
  }

  /**
   * Makes a new room's durable lines visible: its index, built off to the side (file-store's
   * `buildIndex`, in time slices), is installed with its ids in the directory, in one synchronous
   * step. Only the newest CACHED_ON_INSTALL messages go into the cache (an import of thousands
   * would push out every room's recent messages; older ones are read from the log when asked).
   * A room that has an index already (an empty log left by a create that never finished) gets
   * the lines added to it by `apply` instead.
   */
  install(roomId: string, index: RoomIndex, messages: readonly Message[], offsets: readonly number[], lengths: readonly number[], metas: LineMeta[]): void {
    if (this.indexes.has(roomId) || this.lazy.has(roomId)) return this.apply(roomId, messages, offsets, lengths, metas);
    this.indexes.set(roomId, index);
    this.recount(roomId, index);
    this.learn(roomId, index);
    for (let i = Math.max(0, messages.length - CACHED_ON_INSTALL); i < messages.length; i++) this.cache.set(messages[i]!);
  }

  /** Brings the running total of loaded index bytes up to date for one room (loaded or grown). */
  private recount(roomId: string, index: RoomIndex): void {
    const bytes = index.bytes;
    this.countedBytes += bytes - (this.counted.get(roomId) ?? 0);
    this.counted.set(roomId, bytes);
  }
}
