// The messages kept in memory: one least-recently-used cache over all rooms, bounded by a count
// (CACHE_MESSAGES). New messages go in as they are committed, so the recent tail of every busy
// room is served from memory; anything else is read from the log (log-reader.ts) and cached.
// Cached objects are the store's own: callers get copies.
//
// lru-cache, not a Map evicting its first key: a Map that keeps deleting its oldest entry makes
// `keys().next()` skip every deleted slot before the live one, so once the cache was full each
// commit's eviction cost grew with the messages evicted since the Map last rehashed (a send
// cost +30 µs of CPU past 50,000 messages).
import { LRUCache } from 'lru-cache';
import type { Message } from '../types.js';

export class MessageCache {
  /** Absent when the capacity is 0 (nothing cached). */
  private readonly entries: LRUCache<string, Message> | undefined;
  hits = 0;
  misses = 0;

  constructor(readonly capacity: number) {
    this.entries = capacity > 0 ? new LRUCache<string, Message>({ max: capacity }) : undefined;
  }

  private static key(roomId: string, seq: number): string {
    return `${seq}\u0000${roomId}`;
  }

  get size(): number {
    return this.entries?.size ?? 0;
  }

  get(roomId: string, seq: number): Message | undefined {
    const m = this.entries?.get(MessageCache.key(roomId, seq));
    if (m === undefined) this.misses++;
    else this.hits++;
    return m;
  }

  set(m: Message): void {
    this.entries?.set(MessageCache.key(m.room_id, m.seq), m);
  }
}
