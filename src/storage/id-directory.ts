// Which rooms may hold a message id: what `getMessage` (get_full_message names a message by id
// alone) consults instead of every room's id table, so those tables need not stay in memory.
//
// Entries are (32-bit hash of the id, room ordinal) pairs in sorted runs of typed arrays:
// 4 bytes of hash and 2 of ordinal a message (4 once there are more than 65,536 rooms), no
// empty slots. New pairs collect in a small unsorted buffer; a full buffer (or a room's whole id
// table at once) becomes a sorted run, and runs of similar size are merged, so there are
// O(log n) runs and each pair is copied O(log n) times in all. A lookup is a binary search per
// run. Hashes collide and pairs are never removed (a room's message ids never change), so the
// answer is a set of candidate rooms: the caller checks the id in each.
const PENDING = 4096;

type Ordinals = Uint16Array | Uint32Array;

interface Run {
  keys: Uint32Array;
  rooms: Ordinals;
}

export class MessageIdDirectory {
  private readonly names: string[] = [];
  private readonly ordinals = new Map<string, number>();
  /** Sorted runs, oldest (largest) first. */
  private runs: Run[] = [];
  private readonly pendingKeys = new Uint32Array(PENDING);
  private readonly pendingRooms = new Uint32Array(PENDING);
  private pending = 0;

  /** Pairs held (duplicates included). */
  get size(): number {
    return this.runs.reduce((n, r) => n + r.keys.length, this.pending);
  }

  /** Bytes of the runs and the buffer (room names not counted: one string a room). */
  get bytes(): number {
    return this.runs.reduce((n, r) => n + r.keys.byteLength + r.rooms.byteLength, this.pendingKeys.byteLength + this.pendingRooms.byteLength);
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
    if (this.pending === PENDING) this.flush();
    this.pendingKeys[this.pending] = hash >>> 0;
    this.pendingRooms[this.pending] = this.ordinalOf(roomId);
    this.pending++;
  }

  /** All the message ids of a room at once: its id table's hash slots (0 = empty, skipped). */
  addRoom(roomId: string, hashes: Int32Array): void {
    let n = 0;
    for (let i = 0; i < hashes.length; i++) if (hashes[i] !== 0) n++;
    if (n === 0) return;
    const keys = new Uint32Array(n);
    n = 0;
    for (let i = 0; i < hashes.length; i++) if (hashes[i] !== 0) keys[n++] = hashes[i]! >>> 0;
    keys.sort(); // numeric for typed arrays
    const ordinal = this.ordinalOf(roomId); // before the array: it may need 32-bit ordinals
    const rooms = this.ordinalArray(n);
    rooms.fill(ordinal);
    this.push({ keys, rooms });
  }

  /** The rooms that may hold a message with this hash, each once. */
  roomsOf(hash: number): string[] {
    const key = hash >>> 0;
    const found = new Set<number>();
    for (const run of this.runs) {
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
    const order = Array.from({ length: n }, (_, i) => i).sort((a, b) => this.pendingKeys[a]! - this.pendingKeys[b]!);
    const keys = new Uint32Array(n);
    const rooms = this.ordinalArray(n);
    order.forEach((from, to) => {
      keys[to] = this.pendingKeys[from]!;
      rooms[to] = this.pendingRooms[from]!;
    });
    this.pending = 0;
    this.push({ keys, rooms });
  }

  /** Adds a sorted run, then merges the newest runs while the one before is not much larger. */
  private push(run: Run): void {
    this.runs.push(run);
    while (this.runs.length >= 2) {
      const last = this.runs[this.runs.length - 1]!;
      const before = this.runs[this.runs.length - 2]!;
      if (before.keys.length > 2 * last.keys.length) break;
      this.runs.splice(-2, 2, this.merge(before, last));
    }
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
