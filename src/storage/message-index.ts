// In-memory indexes over all room logs: latest version of each message by id, and per room an
// array in seq order (handed out as is, so roomMessages is O(1)).
//
// Messages are treated as immutable once appended: the log line is serialised at append time,
// so a caller who mutated an appended object would make memory and disk disagree. A new
// version is a new object appended under the same message_id.
import type { Message } from '../types.js';

const EMPTY: readonly Message[] = Object.freeze([]);

export class MessageIndex {
  private readonly byId = new Map<string, Message>();
  private readonly byRoom = new Map<string, Message[]>();

  get count(): number {
    return this.byId.size;
  }

  get(messageId: string): Message | undefined {
    return this.byId.get(messageId);
  }

  room(roomId: string): readonly Message[] {
    return this.byRoom.get(roomId) ?? EMPTY;
  }

  nextSeq(roomId: string): number {
    const list = this.byRoom.get(roomId);
    return list && list.length > 0 ? list[list.length - 1]!.seq + 1 : 1;
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
      const prevSeq = this.byId.get(m.message_id)?.seq ?? newInBatch.get(m.message_id);
      if (prevSeq !== undefined) {
        const prevRoom = this.byId.get(m.message_id)?.room_id ?? roomId;
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
   * Start-up bulk load of one room's log, in file order. One hash operation per message on the
   * common path (a new id at the end of the room): at a million messages this is a second saved.
   */
  loadRoom(roomId: string, messages: readonly Message[]): void {
    let list = this.byRoom.get(roomId);
    if (!list) {
      list = [];
      this.byRoom.set(roomId, list);
    }
    for (const m of messages) {
      const size = this.byId.size;
      const last = list.length > 0 ? list[list.length - 1]!.seq : 0;
      if (m.seq > last) {
        this.byId.set(m.message_id, m);
        if (this.byId.size > size) {
          list.push(m);
          continue;
        }
        // A known id with a higher seq: only a hand-edited log does that. Move it to the end.
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
