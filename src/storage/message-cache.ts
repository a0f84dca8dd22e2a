// The messages kept in memory: one least-recently-used cache over all rooms, bounded by a count
// (CACHE_MESSAGES). New messages go in as they are committed, so the recent tail of every busy
// room is served from memory; anything else is read from the log (log-reader.ts) and cached.
// Cached objects are the store's own: callers get copies.
import type { Message } from '../types.js';

export class MessageCache {
  private readonly entries = new Map<string, Message>();
  hits = 0;
  misses = 0;

  constructor(readonly capacity: number) {}

  private static key(roomId: string, seq: number): string {
    return `${seq}\u0000${roomId}`;
  }

  get size(): number {
    return this.entries.size;
  }

  get(roomId: string, seq: number): Message | undefined {
    const key = MessageCache.key(roomId, seq);
    const m = this.entries.get(key);
    if (m === undefined) {
      this.misses++;
      return undefined;
    }
    this.hits++;
    this.entries.delete(key); // move to the most recent end
    this.entries.set(key, m);
    return m;
  }

  set(m: Message): void {
    const key = MessageCache.key(m.room_id, m.seq);
    this.entries.delete(key);
    if (this.capacity <= 0) return;
    this.entries.set(key, m);
    while (this.entries.size > this.capacity) {
      const oldest = this.entries.keys().next().value as string;
      this.entries.delete(oldest);
    }
  }
}
