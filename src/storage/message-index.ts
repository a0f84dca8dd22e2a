// In-memory indexes over all room logs: latest version of each message by id, and per room an
// array in seq order (handed out as is, so roomMessages is O(1)).
//
// Rooms can be registered lazily (addLazyRoom): only their ids and last seq are known, and the
// loader parses the log on first need — roomMessages, getMessage of one of its ids, an append
// (FileStore calls ensure first) — or when FileStore's background warm-up gets to it. nextSeq
// and count never parse. If the loader throws (a corrupt line found after open), the room stays
// unloaded and every later read of it throws the same Error (the server answers internal_error);
// the rest of the store keeps working.
//
// Messages are treated as immutable once appended: the log line is serialised at append time,
// so a caller who mutated an appended object would make memory and disk disagree. A new
// version is a new object appended under the same message_id.
import type { Message } from '../types.js';

const EMPTY: readonly Message[] = Object.freeze([]);

/** Parses a lazily registered room's log: its messages in file order, or throws. */
export type RoomLoader = (roomId: string) => Message[];

// A room whose log is not parsed yet. Its ids stay in a per-room Set rather than in byId: a
// million inserts into one Map cost ~1 s at open, a thousand small Sets a quarter of that. An
// id not in byId is then looked up in each unparsed room (only until the warm-up is done).
class LazyRoom {
  error: Error | undefined;
  constructor(
    readonly roomId: string,
    readonly ids: ReadonlySet<string>,
    readonly lastSeq: number,
  ) {}
}

export class MessageIndex {
  private readonly byId = new Map<string, Message>();
  private readonly byRoom = new Map<string, Message[]>();
  private readonly lazy = new Map<string, LazyRoom>();
  /** Ids of the unparsed rooms (an id repeated across logs, only by hand-editing, counts twice). */
  private lazyIds = 0;

  constructor(private readonly loader?: RoomLoader) {}

  /** Distinct message ids, parsed or not. */
  get count(): number {
    return this.byId.size + this.lazyIds;
  }

  /** Rooms registered lazily and not parsed yet (including ones that failed to parse). */
  get lazyRoomIds(): string[] {
    return [...this.lazy.keys()];
  }

  isLoaded(roomId: string): boolean {
    return !this.lazy.has(roomId);
  }

  get(messageId: string): Message | undefined {
    const found = this.byId.get(messageId);
    if (found !== undefined) return found;
    const owner = this.lazyOwner(messageId);
    if (owner === undefined) return undefined;
    this.ensure(owner.roomId);
    return this.byId.get(messageId);
  }

  private lazyOwner(messageId: string): LazyRoom | undefined {
    if (this.lazy.size === 0) return undefined;
    for (const lazy of this.lazy.values()) if (lazy.ids.has(messageId)) return lazy;
    return undefined;
  }

  room(roomId: string): readonly Message[] {
    this.ensure(roomId);
    return this.byRoom.get(roomId) ?? EMPTY;
  }

  nextSeq(roomId: string): number {
    const lazy = this.lazy.get(roomId);
    if (lazy) return lazy.lastSeq + 1;
    const list = this.byRoom.get(roomId);
    return list && list.length > 0 ? list[list.length - 1]!.seq + 1 : 1;
  }

  /**
   * Registers a room whose log is parsed later: its message ids (file order, repeats allowed)
   * and highest seq. Must come before anything is loaded into the room.
   */
  addLazyRoom(roomId: string, ids: ReadonlySet<string>, lastSeq: number): void {
    if (this.byRoom.has(roomId) || this.lazy.has(roomId)) throw new Error(`room ${roomId} is already indexed`);
    this.lazy.set(roomId, new LazyRoom(roomId, ids, lastSeq));
    this.lazyIds += ids.size;
  }

  /** Parses the room now if it is registered lazily; throws if its log is corrupt. */
  ensure(roomId: string): void {
    const lazy = this.lazy.get(roomId);
    if (!lazy) return;
    if (lazy.error) throw lazy.error;
    if (!this.loader) throw new Error(`no loader for lazy room ${roomId}`);
    let messages: Message[];
    try {
      messages = this.loader(roomId);
    } catch (err) {
      lazy.error = err instanceof Error ? err : new Error(String(err));
      throw lazy.error;
    }
    this.lazy.delete(roomId);
    this.lazyIds -= lazy.ids.size;
    this.loadRoom(roomId, messages);
  }

  /**
   * Throws, changing nothing, unless every message belongs to the room and either is new with a
   * seq above the room's last, or is a new version of a message of this room with its old seq.
   */
  validate(roomId: string, messages: readonly Message[]): void {
    let last = this.nextSeq(roomId) - 1;
    const newInBatch = new Map<string, number>();
    for (const m of messages) {
      if (m.room_id !== roomId) throw new Error(`message ${m.message_id} has room_id ${m.room_id}, appended to ${roomId}`);
      const known = this.byId.get(m.message_id);
      const lazyOwner = known === undefined ? this.lazyOwner(m.message_id) : undefined;
      if (lazyOwner) throw new Error(`message ${m.message_id} belongs to room ${lazyOwner.roomId}`);
      const prevSeq = known?.seq ?? newInBatch.get(m.message_id);
      if (prevSeq !== undefined) {
        const prevRoom = known?.room_id ?? roomId;
        if (prevRoom !== roomId) throw new Error(`message ${m.message_id} belongs to room ${prevRoom}`);
        if (m.seq !== prevSeq) throw new Error(`a new version of message ${m.message_id} must keep seq ${prevSeq}, got ${m.seq}`);
        continue;
      }
      if (!Number.isInteger(m.seq) || m.seq <= last) {
        throw new Error(`message ${m.message_id} has seq ${m.seq}; room ${roomId} is at ${last} (use nextSeq)`);
      }
      last = m.seq;
      newInBatch.set(m.message_id, m.seq);
    }
  }

  /**
   * Bulk load of one room's messages in file order (a parsed log, or appended messages).
   */
  loadRoom(roomId: string, messages: readonly Message[]): void {
    let list = this.byRoom.get(roomId);
    if (!list) {
      list = [];
      this.byRoom.set(roomId, list);
    }
    for (const m of messages) {
      const prev = this.byId.get(m.message_id);
      const last = list.length > 0 ? list[list.length - 1]!.seq : 0;
      if (prev === undefined) {
        this.byId.set(m.message_id, m);
        if (m.seq > last) list.push(m);
        else insertBySeq(list, m);
        continue;
      }
      if (m.seq > last) {
        // A known id with a higher seq: only a hand-edited log does that. Move it to the end.
        this.byId.set(m.message_id, m);
        const i = list.findIndex((x) => x.message_id === m.message_id);
        if (i >= 0) list.splice(i, 1);
        list.push(m);
        continue;
      }
      this.apply(roomId, m); // a new version (same seq) or an out-of-order line
    }
  }

  /** Adds a message or replaces its previous version in place (by seq). */
  apply(roomId: string, m: Message): void {
    let list = this.byRoom.get(roomId);
    if (!list) {
      list = [];
      this.byRoom.set(roomId, list);
    }
    const prev = this.byId.get(m.message_id);
    this.byId.set(m.message_id, m);
    if (prev) {
      const i = indexOfMessage(list, prev);
      if (i >= 0 && prev.seq === m.seq) {
        list[i] = m;
        return;
      }
      // Only a hand-edited log gets here (validate keeps seqs): move it to its new seq.
      if (i >= 0) list.splice(i, 1);
    }
    insertBySeq(list, m);
  }
}

function insertBySeq(list: Message[], m: Message): void {
  if (list.length === 0 || list[list.length - 1]!.seq < m.seq) {
    list.push(m); // the normal case: logs are written in seq order
    return;
  }
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (list[mid]!.seq <= m.seq) lo = mid + 1;
    else hi = mid;
  }
  list.splice(lo, 0, m);
}

function indexOfMessage(list: Message[], m: Message): number {
  // Seqs are normally dense from 1, so the position is seq - first seq.
  const guess = m.seq - (list[0]?.seq ?? 0);
  if (list[guess]?.message_id === m.message_id) return guess;
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (list[mid]!.seq < m.seq) lo = mid + 1;
    else hi = mid;
  }
  for (let i = lo; i < list.length && list[i]!.seq === m.seq; i++) {
    if (list[i]!.message_id === m.message_id) return i;
  }
  return list.indexOf(m);
}
