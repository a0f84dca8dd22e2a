// The store's message cache (src/storage/message-cache.ts): bounded by a count, least recently
// used out first, nothing kept at capacity 0, and its hit/miss counters.
import { describe, expect, it } from 'vitest';
import { MessageCache } from '../../src/storage/message-cache.js';
import type { Message } from '../../src/types.js';

const msg = (room: string, seq: number): Message => ({ room_id: room, seq, message_id: `${room}-${seq}` }) as Message;

describe('MessageCache', () => {
  it('keeps the most recently used messages within its capacity', () => {
    const cache = new MessageCache(3);
    for (let seq = 1; seq <= 3; seq++) cache.set(msg('a', seq));
    expect(cache.get('a', 1)?.message_id).toBe('a-1'); // now the most recent
    cache.set(msg('b', 1)); // evicts a/2, the least recently used
    expect(cache.size).toBe(3);
    expect(cache.get('a', 2)).toBeUndefined();
    expect(cache.get('a', 1)?.message_id).toBe('a-1');
    expect(cache.get('a', 3)?.message_id).toBe('a-3');
    expect(cache.get('b', 1)?.message_id).toBe('b-1');
    expect([cache.hits, cache.misses]).toEqual([4, 1]);
  });

  it('tells rooms apart and replaces a seq with its newer version', () => {
    const cache = new MessageCache(10);
    cache.set(msg('a', 1));
    cache.set(msg('b', 1));
    cache.set({ ...msg('a', 1), message_id: 'edited' });
    expect(cache.size).toBe(2);
    expect(cache.get('a', 1)?.message_id).toBe('edited');
    expect(cache.get('b', 1)?.message_id).toBe('b-1');
  });

  it('stays bounded over many more messages than it holds', () => {
    const cache = new MessageCache(1000);
    for (let seq = 1; seq <= 100_000; seq++) cache.set(msg('a', seq));
    expect(cache.size).toBe(1000);
    expect(cache.get('a', 99_001)?.seq).toBe(99_001);
    expect(cache.get('a', 99_000)).toBeUndefined();
  });

  it('keeps nothing at capacity 0', () => {
    const cache = new MessageCache(0);
    cache.set(msg('a', 1));
    expect(cache.size).toBe(0);
    expect(cache.get('a', 1)).toBeUndefined();
    expect(cache.misses).toBe(1);
  });
});
