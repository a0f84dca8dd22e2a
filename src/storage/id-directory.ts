// Which rooms may hold a message id: what `getMessage` (get_full_message names a message by id
// alone) consults instead of every room's id table, so those tables need not stay in memory.
//
// Entries are (32-bit hash of the id, room ordinal) pairs in sorted runs of typed arrays:
// 4 bytes of hash and 2 of ordinal a message (4 once there are more than 65,536 rooms), no
// empty slots. The pairs are split into 64 shards by the hash's top 6 bits, so no merge copies
// more than a 64th of them (10,000,000 messages: ~160,000 pairs, about a millisecond; one merge
// of them all blocked the event loop ~100 ms). In a shard, new pairs become sorted runs, and
// runs of similar size are merged: O(log n) runs, each pair copied O(log n) times in all. Pairs
// of small rooms and of commits collect in an unsorted buffer first (a lookup scans it: ~32,000
// integers), so runs are not made of a handful of pairs (tens of thousands of tiny typed arrays
// were garbage-collection pauses). Merges run in the background, a few milliseconds an
// event-loop turn (`mergeFor`): the shards fill evenly, so they all reached a merge of their
// largest runs at the same add, and that one add copied the whole directory (10,000,000
// messages: 50–100 ms, a stall of every request then). A lookup is a binary search per run of
// one shard, merged or not yet. Hashes
// collide and pairs are never removed (a room's message ids never change), so the answer is a
// set of candidate rooms: the caller checks the id in each.
const PENDING = 32_768;
const SHARD_SHIFT = 26;
const SHARDS = 1 << (32 - SHARD_SHIFT);
/** A slice of an id table with fewer ids than this goes through the buffer. */
const SMALL = 4096;
/** Room ordinals below this pack with a hash into one float64 (see flush). */
const PACKED_ORDINALS = 2 ** 21;
/** Id-table slots handled between two yields to the event loop (`addRoomYielding`): sorting 65,536 held a request ~5 ms. */
const SLOTS_PER_TURN = 16_384;
/** Merging done in one event-loop turn at most (one merge may overrun it: ~1 ms at 10M messages). */
const MERGE_TURN_MS = 3;

type Ordinals = Uint16Array | Uint32Array;

interface Run {
  keys: Uint32Array;
  rooms: Ordinals;
}

export class MessageIdDirectory {
  private readonly names: string[] = [];
  private readonly ordinals = new Map<string, number>();
  /** Per shard (the hash's top byte), sorted runs, oldest (largest) first. */
  private readonly shards: Run[][] = Array.from({ length: SHARDS }, () => []);
  private readonly pendingKeys = new Uint32Array(PENDING);
  private readonly pendingRooms = new Uint32Array(PENDING);
  private pending = 0;
  /** Shards with a run pushed since their last merge, and whether a merge turn is scheduled. */
  private readonly unmerged = new Set<number>();
  private mergeScheduled = false;

  /** `packBelow`: room ordinals the buffer's sort packs with the hash (tests lower it). */
  constructor(private readonly packBelow = PACKED_ORDINALS) {}

  /** Pairs held (duplicates included). */
  get size(): number {
    let n = this.pending;
    for (const runs of this.shards) for (const r of runs) n += r.keys.length;
    return n;
  }

  /** Sorted runs held, in all shards (merged in the background, see mergeFor). */
  get runCount(): number {
    let n = 0;
    for (const runs of this.shards) n += runs.length;
    return n;
  }

  /** Bytes of the runs and the buffer (room names not counted: one string a room). */
  get bytes(): number {
    let n = this.pendingKeys.byteLength + this.pendingRooms.byteLength;
    for (const runs of this.shards) for (const r of runs) n += r.keys.byteLength + r.rooms.byteLength;
    return n;
  }

  private ordinalOf(roomId: string): number {
    let ordinal = this.ordinals.get(roomId);
    if (ordinal === undefined) {
      ordinal = this.names.length;
      this.names.push(roomId);
      this.ordinals.set(roomId, ordinal);
    }
    return ordinal;
  }

  /** One message id of the room (its hash32). */
  add(hash: number, roomId: string): void {
    this.addPending(hash, this.ordinalOf(roomId));
  }

  private addPending(hash: number, ordinal: number): void {
    if (this.pending === PENDING) this.flush();
    this.pendingKeys[this.pending] = hash >>> 0;
    this.pendingRooms[this.pending] = ordinal;
    this.pending++;
  }

  /** All the message ids of a room at once: its id table's hash slots (0 = empty, skipped). */
  addRoom(roomId: string, hashes: Int32Array): void {
    const ordinal = this.ordinalOf(roomId);
    for (let from = 0; from < hashes.length; from += SLOTS_PER_TURN) this.addSlots(ordinal, hashes, from, Math.min(hashes.length, from + SLOTS_PER_TURN));
  }

  /** `addRoom` a slice at a time, yielding in between (a big room's table is millions of slots). */
  async addRoomYielding(roomId: string, hashes: Int32Array): Promise<void> {
    const ordinal = this.ordinalOf(roomId);
    for (let from = 0; from < hashes.length; from += SLOTS_PER_TURN) {
      if (from > 0) await new Promise<void>((resolve) => setImmediate(resolve));
      this.addSlots(ordinal, hashes, from, Math.min(hashes.length, from + SLOTS_PER_TURN));
    }
  }

  private addSlots(ordinal: number, hashes: Int32Array, from: number, to: number): void {
    let n = 0;
    for (let i = from; i < to; i++) if (hashes[i] !== 0) n++;
    if (n === 0) return;
    if (n < SMALL) {
      for (let i = from; i < to; i++) if (hashes[i] !== 0) this.addPending(hashes[i]!, ordinal);
      return;
    }
    const keys = new Uint32Array(n);
    n = 0;
    for (let i = from; i < to; i++) if (hashes[i] !== 0) keys[n++] = hashes[i]! >>> 0;
    keys.sort(); // numeric for typed arrays
    const rooms = this.ordinalArray(n);
    rooms.fill(ordinal);
    this.addSorted(keys, rooms);
  }

  /** The rooms that may hold a message with this hash, each once. */
  roomsOf(hash: number): string[] {
    const key = hash >>> 0;
    const found = new Set<number>();
    for (const run of this.shards[key >>> SHARD_SHIFT]!) {
      for (let i = lowerBound(run.keys, key); i < run.keys.length && run.keys[i] === key; i++) found.add(run.rooms[i]!);
    }
    for (let i = 0; i < this.pending; i++) if (this.pendingKeys[i] === key) found.add(this.pendingRooms[i]!);
    return [...found].map((ordinal) => this.names[ordinal]!);
  }

  private ordinalArray(n: number): Ordinals {
    return this.names.length <= 0x10000 ? new Uint16Array(n) : new Uint32Array(n);
  }

  private flush(): void {
    const n = this.pending;
    const keys = new Uint32Array(n);
    const rooms = this.ordinalArray(n);
    if (this.names.length <= this.packBelow) {
      // Sorted natively as one number a pair: hash × 2^21 + ordinal (exact below 2^53).
      const packed = new Float64Array(n);
      for (let i = 0; i < n; i++) packed[i] = this.pendingKeys[i]! * PACKED_ORDINALS + this.pendingRooms[i]!;
      packed.sort();
      for (let i = 0; i < n; i++) {
        const ordinal = packed[i]! % PACKED_ORDINALS;
        keys[i] = (packed[i]! - ordinal) / PACKED_ORDINALS;
        rooms[i] = ordinal;
      }
    } else {
      const order = Array.from({ length: n }, (_, i) => i).sort((a, b) => this.pendingKeys[a]! - this.pendingKeys[b]!);
      order.forEach((from, to) => {
        keys[to] = this.pendingKeys[from]!;
        rooms[to] = this.pendingRooms[from]!;
      });
    }
    this.pending = 0;
    this.addSorted(keys, rooms);
  }

  /** Sorted pairs: each shard's part (contiguous, the shard being the top byte) becomes a run. */
  private addSorted(keys: Uint32Array, rooms: Ordinals): void {
    for (let i = 0; i < keys.length; ) {
      const shard = keys[i]! >>> SHARD_SHIFT;
      let j = i + 1;
      while (j < keys.length && keys[j]! >>> SHARD_SHIFT === shard) j++;
      const whole = i === 0 && j === keys.length;
      this.shards[shard]!.push({ keys: whole ? keys : keys.slice(i, j), rooms: whole ? rooms : rooms.slice(i, j) });
      this.unmerged.add(shard);
      i = j;
    }
    if (!this.mergeScheduled) {
      this.mergeScheduled = true;
      setImmediate(() => this.mergeTurn());
    }
  }

  private mergeTurn(): void {
    if (this.mergeFor(MERGE_TURN_MS)) this.mergeScheduled = false;
    else setImmediate(() => this.mergeTurn());
  }

  /**
   * Merges, in each shard that got a run, the newest runs while the one before is not much
   * larger, for about `budgetMs`. Returns true once no merge is left.
   */
  mergeFor(budgetMs: number): boolean {
    const until = performance.now() + budgetMs;
    for (const shard of this.unmerged) {
      const runs = this.shards[shard]!;
      while (runs.length >= 2) {
        const last = runs[runs.length - 1]!;
        const before = runs[runs.length - 2]!;
        if (before.keys.length > 2 * last.keys.length) break;
        runs.splice(-2, 2, this.merge(before, last));
        if (performance.now() > until) return false;
      }
      this.unmerged.delete(shard);
    }
    return true;
  }

  private merge(a: Run, b: Run): Run {
    const n = a.keys.length + b.keys.length;
    const keys = new Uint32Array(n);
    const rooms = this.ordinalArray(n);
    let i = 0;
    let j = 0;
    for (let k = 0; k < n; k++) {
      if (j >= b.keys.length || (i < a.keys.length && a.keys[i]! <= b.keys[j]!)) {
        keys[k] = a.keys[i]!;
        rooms[k] = a.rooms[i++]!;
      } else {
        keys[k] = b.keys[j]!;
        rooms[k] = b.rooms[j++]!;
      }
    }
    return { keys, rooms };
  }
}

/** The first position whose key is ≥ `key` (keys sorted ascending). */
function lowerBound(keys: Uint32Array, key: number): number {
  let lo = 0;
  let hi = keys.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (keys[mid]! < key) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
