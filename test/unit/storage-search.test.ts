// Search over the log (log-search.ts): the raw-byte prefilters, the reused read buffer and the
// early stop must return exactly what a full parse returns. Every query is compared with the
// reference store (MemoryStore: every message lowered and compared) on a room holding tricky
// texts — mixed case, JSON escapes, Chinese, emoji, İ and K (which lower to ASCII), edits,
// deletes, invisible messages — with blocks and pieces so small that matches fall across
// every boundary, and with the production sizes.
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { silentLogger } from '../../src/logger.js';
import { FileStore } from '../../src/storage/file-store.js';
import { defaultFsOps, type FsOps } from '../../src/storage/fs-ops.js';
import { candidateLines, searchTuning } from '../../src/storage/log-search.js';
import { MemoryStore } from '../../src/storage/memory-store.js';
import type { Store } from '../../src/storage/store.js';
import type { Message } from '../../src/types.js';
import { fileStoresPerTest, makeMessage, makeRoom, tempDir } from './storage-helpers.js';

const ROOM = 'search-room';
const TEXTS = [
  'Hello World',
  'hello world, again',
  'HELLO WORLD SHOUTED',
  'say "hi" to the \\ backslash',
  'line one\nline two\ttabbed',
  'control \u0001 char and \u001f',
  '架构设计评审 performance',
  '数据库 schema 迁移',
  'emoji 🎉 party 🚀 launch',
  'İstanbul is a city',
  'the \u212a (Kelvin) sign',
  'straße and STRASSE',
  'ÉTÉ été Été',
  'unicode escape \u2028 separator',
  'mixed 中文 and English Words',
  'x'.repeat(3000) + ' long line end-marker',
  'regex chars .*+?^${}()|[]/ here',
  'needle-at-end',
];
const QUERIES = [
  'hello', 'HELLO', 'Hello World', 'world', 'o w', '"hi"', '"', '\\', 'backslash', '\n', 'one\nline', '\t', '\u0001',
  '架构', '数据库 schema', '中文 and', '🎉', 'party 🚀', 'istanbul', 'i', 'i̇', 'k', 'kelvin', 'STRASSE', 'straße', 'été',
  'ÉTÉ', '\u2028', 'end-marker', 'xxxx', '.*+?', '[]', '$', 'needle', 'no such text', 'zzqx', '不存在的词语', 'edited', 'gone',
];

let dir: { dir: string; cleanup: () => Promise<void> };
let file: FileStore;
let reference: MemoryStore;
const saved = { ...searchTuning };

beforeAll(async () => {
  dir = await tempDir();
  file = new FileStore({ dataDir: dir.dir, logger: silentLogger, cacheMessages: 0, compactEveryMs: 0 });
  await file.open();
  reference = new MemoryStore();
  const stores: Store[] = [file, reference];
  const versions = new Map<Store, number>();
  for (const s of stores) versions.set(s, await s.createRoom(makeRoom(ROOM)));
  const commit = async (messages: Message[]) => {
    for (const s of stores) versions.set(s, await s.commitRoom(ROOM, { messages, expectedVersion: versions.get(s)! }));
  };
  let seq = 0;
  const all: Message[] = [];
  for (let round = 0; round < 6; round++) {
    const batch = TEXTS.map((text, i) =>
      makeMessage(ROOM, ++seq, { text_content: `${text} #${seq}`, visible: (seq + round) % 7 !== 0, sender_id: i % 2 ? 'a1' : 'u1' }),
    );
    await commit(batch);
    all.push(...batch);
  }
  // Later versions of old messages: edits (the old text must no longer match) and deletes.
  await commit([
    { ...all[0]!, text_content: 'edited Hello again' },
    { ...all[1]!, text_content: '', deleted: true },
    { ...all[8]!, text_content: 'gone 🎉', visible: false },
    { ...all[20]!, text_content: 'edited 架构' },
  ]);
});

afterAll(async () => {
  await file.close();
  await dir.cleanup();
});

afterEach(() => Object.assign(searchTuning, saved));

describe('search over the log equals a full parse', () => {
  it.each([
    ['production sizes', saved.blockBytes, saved.pieceBytes],
    ['blocks smaller than a line, tiny pieces', 256, 7],
    ['odd block and piece sizes', 4099, 61],
  ])('%s', async (_name, blockBytes, pieceBytes) => {
    Object.assign(searchTuning, { blockBytes, pieceBytes });
    for (const q of QUERIES) {
      for (const limit of [1, 3, 1000]) {
        const got = await file.searchMessages(ROOM, q, limit);
        expect(got, `${JSON.stringify(q)} limit ${limit}`).toEqual(await reference.searchMessages(ROOM, q, limit));
      }
    }
    expect((await file.searchMessages(ROOM, 'hello', 1000)).length).toBeGreaterThan(5);
  });
});

describe('candidate lines', () => {
  const lines = TEXTS.map((t) => JSON.stringify({ text_content: t }));
  const block = Buffer.from(lines.join('\n') + '\n', 'utf8');
  const candidates = (q: string, pieceBytes: number): string[] => {
    searchTuning.pieceBytes = pieceBytes;
    const out: string[] = [];
    candidateLines(q.toLowerCase())(block, (start, end) => out.push(block.toString('utf8', start, end)));
    return out;
  };

  it.each(QUERIES)('never drops a line whose text matches %j, at any piece size', (q) => {
    const matching = lines.filter((_, i) => TEXTS[i]!.toLowerCase().includes(q.toLowerCase()));
    for (const piece of [1, 5, 64, 65536]) expect(candidates(q, piece)).toEqual(expect.arrayContaining(matching));
  });

  it('passes on only the lines that hold an ASCII or Chinese query; İ or K in a block sends every line', () => {
    const plain = lines.filter((_, i) => !/[İ\u212a]/.test(TEXTS[i]!));
    const plainBlock = Buffer.from(plain.join('\n') + '\n', 'utf8');
    const found = (q: string): string[] => {
      const out: string[] = [];
      candidateLines(q)(plainBlock, (start, end) => out.push(plainBlock.toString('utf8', start, end)));
      return out;
    };
    searchTuning.pieceBytes = 16;
    expect(found('world')).toEqual(plain.slice(0, 3));
    expect(found('数据库')).toEqual([lines[7]]);
    expect(found('🚀')).toHaveLength(plain.length); // a block that may hold it: every line
    expect(found('no such')).toEqual([]);
    expect(candidates('world', 16)).toHaveLength(lines.length);
  });
});

describe('a search over a log that changes while it runs, and its early stop', () => {
  const scratch = fileStoresPerTest();
  const ROOM2 = 'r-live';
  /** Bytes the searches read, and a hook run (once) before a read at `hookFrom` or later. */
  let bytesRead = 0;
  let beforeLaterRead: (() => Promise<void>) | undefined;
  let hookFrom = 1;
  const read: FsOps['read'] = async (handle, buffer, offset, length, position) => {
    if (position >= hookFrom && beforeLaterRead) {
      const hook = beforeLaterRead;
      beforeLaterRead = undefined;
      await hook();
    }
    const n = await defaultFsOps.read(handle, buffer, offset, length, position);
    bytesRead += n;
    return n;
  };
  let store: FileStore;
  let version = 0;
  const commit = async (messages: Message[]) => {
    version = await store.commitRoom(ROOM2, { messages, expectedVersion: version });
  };
  const logSize = async () => (await stat(join(scratch.dir, 'room_messages', `${ROOM2}.jsonl`))).size;

  beforeEach(async () => {
    bytesRead = 0;
    beforeLaterRead = undefined;
    hookFrom = 1;
    store = scratch.store(silentLogger, { cacheMessages: 0, compactEveryMs: 0, warmIndexes: false, fsOps: { read } });
    await store.open();
    version = await store.createRoom(makeRoom(ROOM2));
    searchTuning.blockBytes = 4096;
  });

  it('returns each match once, as it was when the search started, whatever is edited, deleted or added meanwhile', async () => {
    const messages = Array.from({ length: 60 }, (_, i) => makeMessage(ROOM2, i + 1, { text_content: `needle ${i + 1}` }));
    await commit(messages);
    // While the search reads its second block: an edit of a message already scanned (seq 1)
    // and of ones not reached yet (seq 50: still a match; seq 51: deleted), and a new match.
    beforeLaterRead = () =>
      commit([
        { ...messages[0]!, text_content: 'needle 1 edited' },
        { ...messages[49]!, text_content: 'needle 50 edited' },
        { ...messages[50]!, text_content: '', deleted: true },
        makeMessage(ROOM2, 61, { text_content: 'needle 61' }),
      ]);
    const during = await store.searchMessages(ROOM2, 'needle', 1000);
    expect(beforeLaterRead).toBeUndefined(); // the edits did land mid-search
    expect(during).toEqual(messages);
    // A search started after the edits sees them.
    const after = await store.searchMessages(ROOM2, 'needle', 1000);
    expect(after.map((m) => [m.seq, m.text_content])).toEqual([
      [1, 'needle 1 edited'],
      ...messages.slice(1, 49).map((m) => [m.seq, m.text_content]),
      [50, 'needle 50 edited'],
      ...messages.slice(51).map((m) => [m.seq, m.text_content]),
      [61, 'needle 61'],
    ]);
  });

  it('stops reading once the oldest matches are found and no older seq has a later line; not before', async () => {
    const messages = Array.from({ length: 200 }, (_, i) => makeMessage(ROOM2, i + 1, { text_content: `common word ${i + 1}` }));
    await commit(messages);
    const firstPart = await logSize();
    // A common word in a log with no later versions: found in the first block, read no further.
    bytesRead = 0;
    expect(await store.searchMessages(ROOM2, 'common', 3)).toEqual(messages.slice(0, 3));
    expect(bytesRead).toBe(4096);

    // Seq 2's latest version is written after seq 200, then 50 more messages: the scan must go
    // on to that line (a stop at the first 3 hits would answer 1, 3, 4), then stop.
    const edited = { ...messages[1]!, text_content: 'common word 2 edited' };
    await commit([edited]);
    const editEnd = await logSize();
    await commit(Array.from({ length: 50 }, (_, i) => makeMessage(ROOM2, 201 + i, { text_content: `common word ${201 + i}` })));
    const size = await logSize();
    expect(size - editEnd).toBeGreaterThan(3 * 4096);
    bytesRead = 0;
    const got = await store.searchMessages(ROOM2, 'common', 3);
    expect(got).toEqual([messages[0], edited, messages[2]]);
    expect(got).toEqual((await store.searchMessages(ROOM2, 'common', 1000)).slice(0, 3)); // the full scan's answer
    bytesRead = 0;
    await store.searchMessages(ROOM2, 'common', 3);
    expect(bytesRead).toBeGreaterThanOrEqual(editEnd);
    expect(bytesRead).toBeLessThan(editEnd + 4096);
    expect(firstPart).toBeLessThan(editEnd);

    // Seq 2 edited again as the search starts (before its first block): the line that counts
    // is still the one after seq 200, which the stop must wait for, and the new one (past the
    // bytes scanned) must not keep the scan going to the end.
    bytesRead = 0;
    hookFrom = 0;
    beforeLaterRead = () => commit([{ ...edited, text_content: 'common word 2 edited twice' }]);
    expect(await store.searchMessages(ROOM2, 'common', 3)).toEqual([messages[0], edited, messages[2]]);
    expect(beforeLaterRead).toBeUndefined();
    expect(bytesRead).toBeGreaterThanOrEqual(editEnd);
    expect(bytesRead).toBeLessThan(editEnd + 4096);
  });
});
