// Bounded memory must not change answers: the same seeded workload of commits (new messages,
// edits, deletes, skip records, client ids, state changes) on a FileStore without a message
// cache (every read from the logs), one with a large cache, and the reference MemoryStore; every
// read path is compared, before and after a reopen.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/logger.js';
import { FileStore } from '../../src/storage/file-store.js';
import { MemoryStore } from '../../src/storage/memory-store.js';
import type { Store } from '../../src/storage/store.js';
import type { Message } from '../../src/types.js';
import { makeMessage, makeRoom, tempDir } from './storage-helpers.js';

const WORDS = ['hello', 'World', '架构', '设计', 'Review', 'latency', '数据库', 'deploy', 'ÉTÉ', 'straße', 'İstanbul', 'Kelvin'];
const SENDERS = [
  { sender_id: 'u1', role: 'user' as const },
  { sender_id: 'u2', role: 'user' as const },
  { sender_id: 'a1', role: 'ai_agent' as const },
  { sender_id: 'a2', role: 'ai_agent' as const },
];

/** A small deterministic PRNG (mulberry32). */
function rng(seed: number): () => number {
  let a = seed;
  return () => {
    a |= 0;
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

let dirs: { dir: string; cleanup: () => Promise<void> }[] = [];
const stores: Store[] = [];
beforeEach(() => {
  dirs = [];
});
afterEach(async () => {
  await Promise.all(stores.splice(0).map((s) => s.close().catch(() => undefined)));
  for (const d of dirs) await d.cleanup();
});

async function fileStore(dir: string, cacheMessages: number, indexCacheBytes?: number): Promise<FileStore> {
  const s = new FileStore({ dataDir: dir, logger: silentLogger, cacheMessages, compactEveryMs: 0, indexCacheBytes });
  stores.push(s);
  await s.open();
  return s;
}

async function workload(targets: Store[], seed: number): Promise<{ rooms: string[]; messages: Message[] }> {
  const random = rng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;
  const rooms = ['cache-a', 'cache-b', 'cache-c'];
  const versions = new Map<Store, Map<string, number>>(targets.map((t) => [t, new Map()]));
  for (const r of rooms) for (const t of targets) versions.get(t)!.set(r, await t.createRoom(makeRoom(r)));
  const all: Message[] = [];
  const lastSeq = new Map(rooms.map((r) => [r, 0]));
  for (let step = 0; step < 250; step++) {
    const roomId = pick(rooms);
    const batch: Message[] = [];
    const roll = random();
    const own = all.filter((m) => m.room_id === roomId);
    if (roll < 0.15 && own.length > 0) {
      const target = pick(own);
      const edited = random() < 0.5 ? { ...target, text_content: `${pick(WORDS)} edited ${step}` } : { ...target, text_content: '', deleted: true };
      batch.push(edited);
      all[all.indexOf(target)] = edited;
    } else {
      const n = 1 + Math.floor(random() * 3);
      for (let i = 0; i < n; i++) {
        const seq = lastSeq.get(roomId)! + 1;
        lastSeq.set(roomId, seq);
        const who = pick(SENDERS);
        const m = makeMessage(roomId, seq, {
          ...who,
          text_content: Array.from({ length: 4 }, () => pick(WORDS)).join(' ') + ` #${seq}`,
          visible: random() > 0.1,
          client_msg_id: random() < 0.5 ? `c-${step}-${i}` : undefined,
        });
        batch.push(m);
        all.push(m);
      }
    }
    const room = random() < 0.3 ? makeRoom(roomId, { room_description: `step ${step}` }) : undefined;
    for (const t of targets) {
      const v = versions.get(t)!;
      v.set(roomId, await t.commitRoom(roomId, { room, messages: batch, expectedVersion: v.get(roomId)! }));
    }
  }
  return { rooms, messages: all };
}

async function answers(store: Store, rooms: string[], messages: Message[]) {
  const out: unknown[] = [];
  for (const roomId of rooms) {
    const last = (await store.loadRoom(roomId))!.lastSeq;
    for (const after of [0, 1, 17, last - 5, last]) out.push(await store.readMessages(roomId, { afterSeq: after, limit: 13 }));
    for (const before of [2, 30, last, last + 1]) out.push(await store.readMessages(roomId, { beforeSeq: before, limit: 13 }));
    out.push(await store.readMessages(roomId, { limit: 7 }));
    out.push(await store.readMessages(roomId, { afterSeq: 10, beforeSeq: 40, limit: 100 }));
    for (const q of [...WORDS, 'HELLO', 'e', '#1', 'no such text', 'istanbul', 'k', 'STRASSE', '"', 'o (', '.*', '[a', 'd #']) {
      out.push(await store.searchMessages(roomId, q, 5));
      out.push((await store.searchMessages(roomId, q, 1000)).map((m) => m.seq));
    }
    for (const s of [...SENDERS.map((x) => x.sender_id), 'nobody']) out.push(await store.lastSeqBySender(roomId, s));
    out.push(await store.lastPersonSeq(roomId));
  }
  for (const m of messages) {
    out.push(await store.getMessage(m.message_id));
    if (m.client_msg_id) out.push(await store.findByClientMsgId(m.room_id, m.sender_id!, m.client_msg_id));
  }
  out.push(await store.messageCount());
  return out;
}

describe('a message cache of any size answers like no cache and like the reference store', () => {
  it.each([1, 2])('seeded workload %i', async (seed) => {
    const cold = await tempDir();
    const warm = await tempDir();
    dirs.push(cold, warm);
    const noCache = await fileStore(cold.dir, 0);
    const bigCache = await fileStore(warm.dir, 1_000_000);
    const reference = new MemoryStore();
    stores.push(reference);
    const { rooms, messages } = await workload([noCache, bigCache, reference], seed);

    const expected = await answers(reference, rooms, messages);
    expect(await answers(noCache, rooms, messages)).toEqual(expected);
    expect(noCache.stats().cachedMessages).toBe(0);
    expect(await answers(bigCache, rooms, messages)).toEqual(expected);
    await noCache.close();
    const reopened = await fileStore(cold.dir, 3);
    expect(await answers(reopened, rooms, messages)).toEqual(expected);
    expect(reopened.stats().cachedMessages).toBeLessThanOrEqual(3);
    await reopened.close();
    // A 1-byte index budget: only the room in use keeps its index; every switch of room drops
    // the others and reads its own again from its `.idx` (the warm-up runs meanwhile).
    const tiny = await fileStore(cold.dir, 0, 1);
    expect(await answers(tiny, rooms, messages)).toEqual(expected);
    const oneRoom = tiny.stats().indexBytes;
    expect(await tiny.readMessages(rooms[0]!, { limit: 1 })).toHaveLength(1);
    expect(tiny.stats().indexBytes).toBeLessThan(oneRoom * 2);
  });
});

describe('the seq tables behind the id and client-id lookups', () => {
  it('keep every seq stored under a hash, through growth, so colliding ids are all candidates', async () => {
    const { SeqTable, hash32 } = await import('../../src/storage/seq-table.js');
    const table = new SeqTable();
    for (let seq = 1; seq <= 5000; seq++) table.add(seq % 7 === 0 ? 42 : hash32(`id-${seq}`), seq);
    expect(table.candidates(42).sort((a, b) => a - b)).toEqual(Array.from({ length: 714 }, (_, i) => (i + 1) * 7));
    expect(table.candidates(hash32('id-13'))).toContain(13);
    expect(table.candidates(hash32('never stored'))).toEqual([]);
    const { keys, seqs, used } = table.export();
    expect(SeqTable.import(keys, seqs, used).candidates(hash32('id-4999'))).toContain(4999);
    expect(hash32('')).not.toBe(0);
  });
});
